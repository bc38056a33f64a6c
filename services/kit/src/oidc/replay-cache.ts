// The jti replay cache of DPoP proofs, in PostgreSQL so a proof replayed on another replica is refused too.
// Every DPoP request writes one row, so the writes are batched: the proofs that arrive while a batch is on its
// way go together in the next statement (a round trip and a statement per batch, not per request).
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { MigrationSource } from '../db/migrate.ts';
import { ignoreError } from '../errors/ignore-error.ts';

export const resourceServerMigrations: MigrationSource = {
  namespace: 'kit-resource-server',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export interface ReplayCache {
  /** True the first time (jkt, jti) is seen before `expiresAt`; false for a replay. */
  firstUse(jkt: string, jti: string, expiresAt: Date): Promise<boolean>;
}

interface Pending {
  key: string;
  expiresAt: number;
  resolve(first: boolean): void;
  reject(error: unknown): void;
}

/** Batches in flight at once: enough to overlap round trips, few enough to leave the pool to the service. */
const MAX_IN_FLIGHT = 2;
const MAX_BATCH = 500;
const storedKey = z.object({ key: z.string() });

export function createReplayCache(pool: DatabasePool): ReplayCache {
  let queue: Pending[] = [];
  let inFlight = 0;

  const store = async (batch: Pending[]): Promise<Set<string>> => {
    // One statement, atomic across replicas: a new key is inserted; a live one is a replay (no row returned); a
    // dead one (not purged yet) is taken over, since a proof that old is refused before it gets here.
    const rows = await pool.any(sql.type(storedKey)`
      insert into dpop_proof_jtis as p (key, expires_at)
      select decode(k, 'hex'), to_timestamp(e)
      from unnest(${sql.array(
        batch.map((p) => p.key),
        'text',
      )}, ${sql.array(
        batch.map((p) => p.expiresAt),
        'float8',
      )}) as t(k, e)
      on conflict (key) do update set expires_at = excluded.expires_at where p.expires_at < now()
      returning encode(key, 'hex') as key`);
    // Dead rows are swept now and then rather than on every request.
    if (Math.random() < 0.01)
      void pool
        .query(sql.unsafe`delete from dpop_proof_jtis where expires_at < now()`)
        .catch(ignoreError('opportunistic purge of expired proof ids; the next one retries'));
    return new Set(rows.map((r) => r.key));
  };

  const flush = () => {
    while (queue.length > 0 && inFlight < MAX_IN_FLIGHT) {
      const taken = queue.slice(0, MAX_BATCH);
      queue = queue.slice(MAX_BATCH);
      // The same key twice in one batch: the first is the use, the others replays (PostgreSQL would refuse to
      // update one row twice in a statement).
      const seen = new Set<string>();
      const batch: Pending[] = [];
      for (const pending of taken) {
        if (seen.has(pending.key)) pending.resolve(false);
        else {
          seen.add(pending.key);
          batch.push(pending);
        }
      }
      inFlight++;
      store(batch)
        .then(
          (stored) => batch.forEach((p) => p.resolve(stored.has(p.key))),
          (error: unknown) => batch.forEach((p) => p.reject(error)),
        )
        .finally(() => {
          inFlight--;
          flush();
        });
    }
  };

  return {
    firstUse(jkt, jti, expiresAt) {
      const key = createHash('sha256').update(jkt).update('\0').update(jti).digest('hex');
      return new Promise<boolean>((resolve, reject) => {
        queue.push({ key, expiresAt: expiresAt.getTime() / 1000, resolve, reject });
        flush();
      });
    },
  };
}
