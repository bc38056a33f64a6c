// Discarding the bytes of an upload that did not commit. When the database fails during the commit, the outcome
// is unknown: the COMMIT may have gone through before the connection died, and deleting the object then would
// leave a row pointing at missing bytes. So the object goes only once the database confirms that no row refers
// to it; while the database or the storage is away (a storage that died mid-upload also left the upload's parts
// behind) the attempt is retried in the background (the service's periodic sweep, with the same check, covers a
// process that dies meanwhile).
import { isDatabaseUnavailable } from '../http/unavailable.ts';
import { StorageUnavailableError } from './errors.ts';
import type { ObjectStore } from './types.ts';

export interface UploadDiscarderOptions {
  store: ObjectStore;
  /** Whether a committed row refers to the key. */
  isReferenced(key: string): Promise<boolean>;
  /** Drops the key's clean-up registration (the row that would have let the sweep remove it). */
  dropRegistration(key: string): Promise<void>;
  log: { warn(object: unknown, message: string): void };
  retryMs?: number;
}

export interface UploadDiscarder {
  /** Deletes the object unless a committed row refers to it; never throws. */
  discard(key: string): Promise<void>;
  /** Keys waiting for the database or the storage to come back. */
  pending(): number;
  stop(): void;
}

export function createUploadDiscarder(options: UploadDiscarderOptions): UploadDiscarder {
  const waiting = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function attempt(key: string): Promise<boolean> {
    try {
      if (!(await options.isReferenced(key))) {
        await options.store.delete(key);
        await options.dropRegistration(key);
      }
      return true;
    } catch (error) {
      if (isDatabaseUnavailable(error) || error instanceof StorageUnavailableError) return false;
      options.log.warn({ err: error, key }, 'could not discard the object of an uncommitted upload; the clean-up sweep will');
      return true;
    }
  }

  function schedule(): void {
    if (timer || stopped || waiting.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void Promise.all([...waiting].map(async (key) => (await attempt(key)) && waiting.delete(key))).finally(schedule);
    }, options.retryMs ?? 1000);
    timer.unref();
  }

  return {
    async discard(key) {
      if (!(await attempt(key))) {
        waiting.add(key);
        schedule();
      }
    },
    pending: () => waiting.size,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
