// Background upkeep on every replica (safe to run on all of them at once):
// - object garbage: deletes the bytes of replaced and deleted files right after their commit, and whatever an
//   interrupted upload or a crash left behind; rows are claimed with SKIP LOCKED so replicas never collide, and
//   a row is only removed once its object is gone; what a crashed process left mid-upload (a local .tmp file, an
//   unfinished S3 multipart upload) goes once older than `uploads.abandoned_after_seconds`, every 10 minutes;
// - event retention: drops events older than `events.retention_hours` and remembers the highest id dropped,
//   so a client resuming from before it is told to re-list instead of silently missing changes.
import { randomUUID } from 'node:crypto';
import { createUploadDiscarder, type ObjectStore } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

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

/** Keys registered together ahead of the uploads that will use them: one commit (and WAL flush) per this many. */
const RESERVED_KEYS = 64;
/** A reserved key is handed out within this of its registration, or never (its row then goes with the sweep). */
const RESERVED_FOR_MS = 60 * 60_000;

/**
 * Upload keys registered as garbage in advance: an upload takes one that is already on the list, instead of
 * registering its own and waiting for that commit (a commit per ~2 uploads at 8 clients, the largest part of
 * PostgreSQL's work for a 10 KiB file after the upload's own commit). A key never handed out (the process stopped,
 * or the reserve aged) has no object: the sweep drops its row after the grace, deleting nothing.
 */
function createKeyReserve(pool: DatabasePool): () => Promise<string> {
  let keys: string[] = [];
  let registeredAt = 0;
  let refilling: Promise<void> | undefined;
  const refill = async () => {
    const fresh = Array.from({ length: RESERVED_KEYS }, () => `files/${randomUUID()}`);
    const started = Date.now();
    await pool.query(sql.unsafe`
      insert into object_garbage (storage_key, delete_after)
      select key, now() + ${UPLOAD_GRACE}::interval from unnest(${sql.array(fresh, 'text')}) key`);
    keys = fresh;
    registeredAt = started;
  };
  return async () => {
    for (;;) {
      if (keys.length > 0 && Date.now() - registeredAt < RESERVED_FOR_MS) return keys.pop()!;
      refilling ??= refill().finally(() => (refilling = undefined));
      await refilling;
    }
  };
}

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

  const reserve = createKeyReserve(pool);

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
     * A fresh object key for an upload, already on the garbage list: the sweep removes its bytes unless the upload's
     * commit takes the key off the list (a process that dies mid-upload leaves no orphan).
     */
    newUploadKey: () => reserve(),
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
