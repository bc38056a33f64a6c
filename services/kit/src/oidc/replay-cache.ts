// The jti replay cache of DPoP proofs, in PostgreSQL so a proof replayed on another replica is refused too.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { MigrationSource } from '../db/migrate.ts';

export const resourceServerMigrations: MigrationSource = {
  namespace: 'kit-resource-server',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export interface ReplayCache {
  /** True the first time (jkt, jti) is seen before `expiresAt`; false for a replay. */
  firstUse(jkt: string, jti: string, expiresAt: Date): Promise<boolean>;
}

const stored = z.object({ stored: z.boolean() });

export function createReplayCache(pool: DatabasePool): ReplayCache {
  return {
    async firstUse(jkt, jti, expiresAt) {
      const key = createHash('sha256').update(jkt).update('\0').update(jti).digest();
      // One statement, atomic across replicas: a new key is inserted; a live one is a replay (no row returned);
      // a dead one (not purged yet) is taken over, since a proof that old would be refused before reaching here.
      const row = await pool.maybeOne(sql.type(stored)`
        insert into dpop_proof_jtis as p (key, expires_at) values (${sql.binary(key)}, ${sql.timestamp(expiresAt)})
        on conflict (key) do update set expires_at = excluded.expires_at where p.expires_at < now()
        returning true as stored`);
      // Dead rows are swept now and then rather than on every request.
      if (Math.random() < 0.01) void pool.query(sql.unsafe`delete from dpop_proof_jtis where expires_at < now()`).catch(() => {});
      return row !== null;
    },
  };
}
