// Background upkeep on every replica (safe to run on all of them at once):
// - object garbage: deletes the bytes of replaced and deleted files right after their commit, and whatever an
//   interrupted upload or a crash left behind; rows are claimed with SKIP LOCKED so replicas never collide, and
//   a row is only removed once its object is gone; what a crashed process left mid-upload (a local .tmp file, an
//   unfinished S3 multipart upload) goes once older than `uploads.abandoned_after_seconds`, every 10 minutes;
// - event retention: drops events older than `events.retention_hours` and remembers the highest id dropped,
//   so a client resuming from before it is told to re-list instead of silently missing changes.
import { createUploadDiscarder, type ObjectStore } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createBatcher } from '../db/batcher.ts';

export interface SweeperOptions {
  pool: DatabasePool;
  store: ObjectStore;
  retentionHours: number;
  abandonedAfterSeconds: number;
  log: { warn(object: unknown, message: string): void; info(object: unknown, message: string): void };
  intervalMs?: number;
}

const batch = 200;
/** How long an upload may take before the sweep may remove its bytes (the registration's delete_after). */
const UPLOAD_GRACE = '1 day';
const deleteConcurrency = 8;
const ABANDONED_SWEEP_MS = 10 * 60_000;

export function createSweeper(options: SweeperOptions) {
  const { pool, store, log } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let abandonedSweptAt = 0;
  const discarder = createUploadDiscarder({
    store,
    isReferenced: (key) => pool.exists(sql.unsafe`select 1 from entries where storage_key = ${key}`),
    dropRegistration: async (key) => void (await pool.query(sql.unsafe`delete from object_garbage where storage_key = ${key}`)),
    log,
  });

  // Registrations that arrive while one is being written go in the next statement together: one commit for many.
  const register = createBatcher<string, void>({
    maxItems: 500,
    run: async (keys) => {
      await pool.query(sql.unsafe`
        insert into object_garbage (storage_key, delete_after)
        select key, now() + ${UPLOAD_GRACE}::interval from unnest(${sql.array([...keys], 'text')}) key`);
      return keys.map(() => ({ ok: true, value: undefined }));
    },
  });

  async function sweepGarbage(): Promise<number> {
    let total = 0;
    for (;;) {
      const removed = await pool.transaction(async (tx) => {
        // A due row whose key an entry still holds is stale (an upload whose commit outcome was unknown): keep
        // the bytes, drop the row.
        await tx.query(sql.unsafe`
          delete from object_garbage g where delete_after <= now() and exists (select 1 from entries e where e.storage_key = g.storage_key)`);
        const keys = await tx.anyFirst(sql.type(z.object({ storage_key: z.string() }))`
          select storage_key from object_garbage where delete_after <= now()
          order by delete_after limit ${batch} for update skip locked`);
        const queue = [...keys];
        const gone: string[] = [];
        await Promise.all(
          Array.from({ length: deleteConcurrency }, async () => {
            for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
              try {
                await store.delete(key);
                gone.push(key);
              } catch (error) {
                log.warn({ err: error, key }, 'could not delete an object; will retry');
              }
            }
          }),
        );
        if (gone.length > 0) await tx.query(sql.unsafe`delete from object_garbage where storage_key = any(${sql.array(gone, 'text')})`);
        return { claimed: keys.length, gone: gone.length };
      });
      total += removed.gone;
      if (removed.claimed < batch || removed.gone === 0) return total;
    }
  }

  async function expireEvents(): Promise<void> {
    await pool.query(sql.unsafe`
      with dropped as (
        delete from events where created_at < now() - make_interval(secs => ${options.retentionHours * 3600}) returning id
      )
      update event_retention set purged_through = greatest(purged_through, (select coalesce(max(id), 0) from dropped))`);
  }

  function run(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await sweepGarbage();
        await expireEvents();
        if (Date.now() - abandonedSweptAt >= ABANDONED_SWEEP_MS) {
          abandonedSweptAt = Date.now();
          const swept = await store.sweepAbandonedUploads(new Date(Date.now() - options.abandonedAfterSeconds * 1000));
          if (swept > 0) log.info({ abandonedUploads: swept }, 'removed what interrupted uploads left');
        }
      } while (again);
    })()
      .catch((error: unknown) => log.warn({ err: error }, 'sweep failed; will retry'))
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    start() {
      timer = setInterval(() => void run(), options.intervalMs ?? 60_000);
      timer.unref();
      void run();
    },
    /** Runs a pass now (after a commit that queued garbage); resolves when it is done. */
    sweepNow: run,
    /**
     * Before an upload stores its first byte under `key`: the sweep removes the bytes unless the upload's commit
     * takes the key off the list (a process that dies mid-upload leaves no orphan).
     */
    registerUpload: (key: string) => register(key),
    /** After an upload that did not commit: its object goes once the database confirms no entry refers to it. */
    discardUpload: (key: string) => discarder.discard(key),
    async close() {
      clearInterval(timer);
      discarder.stop();
      await running;
    },
  };
}

export type Sweeper = ReturnType<typeof createSweeper>;
