// Deleting objects safely around transactions. Rows of `storage_cleanup` name objects that must go:
//  - an upload in progress is registered with a deadline far ahead; committing the file row removes the entry,
//    so an upload that dies with its process is swept once the deadline passes;
//  - objects replaced or deleted are queued (due now) in the transaction that stops referencing them, then
//    deleted right after the commit; if that fails or the process dies, the periodic sweep retries.
// An entry whose object was never stored (the upload died before its bytes were complete) is dropped without a
// delete. What such an upload left on the storage itself (a local temp file, an S3 multipart upload) is removed
// by the store's sweepAbandonedUploads once older than uploads.abandoned_after_seconds, at start and then
// periodically.
import { sql, type CommonQueryMethods, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { createUploadDiscarder, type ObjectStore } from '@boxyard/kit';

/** An upload still unfinished after this long is considered dead (stalls end uploads far sooner). */
const UPLOAD_DEADLINE_HOURS = 48;
const SWEEP_EVERY_MS = 10 * 60 * 1000;

export interface StorageCleanup {
  registerUpload(key: string): Promise<void>;
  forgetUpload(connection: CommonQueryMethods, key: string): Promise<void>;
  /** Queues objects (in the caller's transaction) for deletion after commit. */
  queue(connection: CommonQueryMethods, keys: readonly string[]): Promise<void>;
  /** Queues the objects of every file under the given rows (in the caller's transaction); returns their keys. */
  queueFilesWhere(connection: CommonQueryMethods, scope: FileScope): Promise<string[]>;
  /**
   * Deletes records and the files below them: in one transaction, queues the scope's objects and runs `remove`;
   * after commit, deletes the objects (failures are left for the sweep).
   */
  deleteWithFiles(scope: FileScope, remove: (tx: DatabaseTransactionConnection) => Promise<unknown>): Promise<void>;
  /** Deletes these objects now (after commit) and drops their entries; failures are left for the sweep. */
  deleteNow(keys: readonly string[]): Promise<void>;
  /** After an upload that did not commit: its object goes once the database confirms no row refers to it. */
  discardUpload(key: string): Promise<void>;
  /** Deletes everything due and what dead uploads left; returns how many objects and leftovers went. */
  sweep(): Promise<number>;
  start(): void;
  stop(): void;
}

export type FileScope = { organizationId?: number; boxId?: number; versionId?: number; providerId?: number; architectureId?: number };

export interface CleanupLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export function createStorageCleanup(pool: DatabasePool, store: ObjectStore, log: CleanupLog, options: { abandonedAfterSeconds: number }): StorageCleanup {
  let timer: NodeJS.Timeout | undefined;
  const dropEntry = async (key: string) => void (await pool.query(sql.unsafe`delete from storage_cleanup where storage_key = ${key}`));
  const discarder = createUploadDiscarder({
    store,
    isReferenced: (key) => pool.exists(sql.unsafe`select 1 from files where storage_key = ${key}`),
    dropRegistration: dropEntry,
    log,
  });

  async function deleteNow(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      try {
        await store.delete(key);
      } catch (error) {
        log.warn({ err: error, key }, 'could not delete a stored object; the clean-up sweep will retry');
        continue;
      }
      await dropEntry(key).catch((error: unknown) => log.warn({ err: error, key }, 'object deleted; its clean-up entry stays until the next sweep'));
    }
  }

  const cleanup: StorageCleanup = {
    async registerUpload(key) {
      await pool.query(sql.unsafe`
        insert into storage_cleanup (storage_key, delete_after) values (${key}, now() + make_interval(hours => ${UPLOAD_DEADLINE_HOURS}))`);
    },
    async forgetUpload(connection, key) {
      await connection.query(sql.unsafe`delete from storage_cleanup where storage_key = ${key}`);
    },
    async queue(connection, keys) {
      if (keys.length === 0) return;
      await connection.query(sql.unsafe`
        insert into storage_cleanup (storage_key, delete_after)
        select unnest(${sql.array([...keys], 'text')}::text[]), now()
        on conflict (storage_key) do update set delete_after = now()`);
    },
    async queueFilesWhere(connection, scope) {
      const keys = await connection.anyFirst(sql.type(z.object({ storage_key: z.string() }))`
        select f.storage_key
        from files f
        join architectures a on a.id = f.architecture_id
        join providers p on p.id = a.provider_id
        join versions v on v.id = p.version_id
        join boxes b on b.id = v.box_id
        where (${scope.organizationId ?? null}::bigint is null or b.organization_id = ${scope.organizationId ?? null})
          and (${scope.boxId ?? null}::bigint is null or b.id = ${scope.boxId ?? null})
          and (${scope.versionId ?? null}::bigint is null or v.id = ${scope.versionId ?? null})
          and (${scope.providerId ?? null}::bigint is null or p.id = ${scope.providerId ?? null})
          and (${scope.architectureId ?? null}::bigint is null or a.id = ${scope.architectureId ?? null})`);
      await cleanup.queue(connection, keys);
      return [...keys];
    },
    async deleteWithFiles(scope, remove) {
      const keys = await pool.transaction(async (tx) => {
        const queued = await cleanup.queueFilesWhere(tx, scope);
        await remove(tx);
        return queued;
      });
      await deleteNow(keys);
    },
    deleteNow,
    discardUpload: (key) => discarder.discard(key),
    async sweep() {
      // An entry whose key a file row still holds is stale (an upload whose commit outcome was unknown): keep
      // the bytes, drop the entry.
      await pool.query(sql.unsafe`
        delete from storage_cleanup c where delete_after <= now() and exists (select 1 from files f where f.storage_key = c.storage_key)`);
      const due = await pool.anyFirst(sql.type(z.object({ storage_key: z.string() }))`
        select storage_key from storage_cleanup where delete_after <= now() order by delete_after limit 1000`);
      // An upload registered and never stored (it died first) has no object: drop the entry, delete nothing.
      const stored: string[] = [];
      for (const key of due) {
        if (await store.stat(key)) stored.push(key);
        else await dropEntry(key);
      }
      await deleteNow(stored);
      const abandoned = await store.sweepAbandonedUploads(new Date(Date.now() - options.abandonedAfterSeconds * 1000));
      if (stored.length > 0 || abandoned > 0)
        log.info(
          { deleted: stored.length, abandonedUploads: abandoned },
          'storage clean-up removed objects no row refers to and what interrupted uploads left',
        );
      return stored.length + abandoned;
    },
    start() {
      const run = () => void cleanup.sweep().catch((error: unknown) => log.warn({ err: error }, 'storage clean-up sweep failed'));
      run();
      timer = setInterval(run, SWEEP_EVERY_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      discarder.stop();
    },
  };
  return cleanup;
}
