// API keys: `bfs_<16 hex id>_<43 base64url secret>` (256 random bits). The id is the primary key, so checking a
// key is one indexed lookup plus a constant-time comparison of SHA-256 digests; the secret itself is never
// stored and is shown once, at creation.
//
// A key that checked out is taken on trust for a few seconds (VERIFIED_FOR_MS), so a client sending many small
// requests does not pay a database round trip on each: every change that could refuse it ends that at once on
// every replica (the key's or its owner's row changes notify the account channel: 0004_key_changes.sql and the
// kit's account triggers; a lost listening connection forgets everything), and this replica's own key changes
// forget before they answer. Expiry is checked on every use.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { asRole, PERMISSIONS, type Permission, type Role } from './principal.ts';
import { ignoreError, type AccountChange } from '@boxyard/kit';

export const KEY_PREFIX = 'bfs_';
const keyPattern = /^bfs_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export const apiKeyRow = z.object({
  id: z.string(),
  user_id: z.string(),
  name: z.string(),
  permissions: z.array(z.enum(PERMISSIONS)),
  scope: z.string(),
  expires_at: z.number().nullable(),
  created_by_key: z.string().nullable(),
  created_at: z.number(),
  last_used_at: z.number().nullable(),
});
export type ApiKeyRecord = z.output<typeof apiKeyRow>;

const keyColumns = sql.fragment`k.id, k.user_id, k.name, k.permissions, k.scope, k.expires_at, k.created_by_key, k.created_at, k.last_used_at`;
const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');

export const looksLikeApiKey = (token: string) => token.startsWith(KEY_PREFIX);

/** How long a verified key is trusted without asking the database (unless a change ends it sooner). */
const VERIFIED_FOR_MS = 5_000;
/** Verified keys remembered at most (the oldest go first). */
const MAX_VERIFIED = 1_000;

export interface VerifiedKey {
  key: ApiKeyRecord;
  owner: { id: string; username: string; role: Role };
}

export interface ApiKeyStoreOptions {
  /** Key, user and session changes of every replica (the kit's account watch): they end trusted verifications. */
  changes?: { subscribe(listener: (change: AccountChange) => void): () => void } | undefined;
}

/** Keys that checked out, by the digest of the whole token, until when they are trusted. */
function createVerifiedKeys(options: ApiKeyStoreOptions) {
  const trusted = new Map<string, { verified: VerifiedKey; until: number }>();
  // Counts changes: a verification whose read began before a change is not remembered (it may predate it).
  let generation = 0;
  const forget = (which?: (verified: VerifiedKey) => boolean) => {
    generation++;
    if (!which) return trusted.clear();
    for (const [token, entry] of trusted) if (which(entry.verified)) trusted.delete(token);
  };
  options.changes?.subscribe((change) => {
    if (change.kind === 'key') forget((v) => v.key.id === change.id);
    else if (change.kind === 'user') forget((v) => v.owner.id === change.id);
    else if (change.kind === 'resync') forget();
  });
  return {
    get(tokenDigest: string): VerifiedKey | undefined {
      const entry = trusted.get(tokenDigest);
      if (!entry) return undefined;
      if (entry.until > Date.now()) return entry.verified;
      trusted.delete(tokenDigest);
      return undefined;
    },
    /** Where the changes stand now: pass it to set() for a read that starts now. */
    generation: () => generation,
    set(tokenDigest: string, verified: VerifiedKey, readSince: number): void {
      // Without a change feed nothing would end the trust early: then every use asks the database.
      if (!options.changes || readSince !== generation) return;
      trusted.delete(tokenDigest);
      trusted.set(tokenDigest, { verified, until: Date.now() + VERIFIED_FOR_MS });
      if (trusted.size > MAX_VERIFIED) trusted.delete(trusted.keys().next().value!);
    },
    forget,
  };
}

export function createApiKeyStore(pool: DatabasePool, options: ApiKeyStoreOptions = {}) {
  const verifiedKeys = createVerifiedKeys(options);
  return {
    /** The key and its owner for a presented token, or a reason it is refused. */
    async verify(token: string): Promise<VerifiedKey | { refused: string }> {
      const tokenDigest = digest(token);
      const trusted = verifiedKeys.get(tokenDigest);
      if (trusted) {
        if (trusted.key.expires_at !== null && trusted.key.expires_at <= Date.now()) return { refused: 'API key expired' };
        return trusted;
      }
      const readSince = verifiedKeys.generation();
      const match = keyPattern.exec(token);
      if (!match) return { refused: 'malformed API key' };
      const [, id, secret] = match as unknown as [string, string, string];
      const row = await pool.maybeOne(sql.type(apiKeyRow.extend({ secret_sha256: z.string(), username: z.string(), role: z.string() }))`
        select ${keyColumns}, k.secret_sha256, u.username, u.role
        from api_keys k join users u on u.id = k.user_id where k.id = ${id} and u.disabled_at is null`);
      const expected = Buffer.from(row?.secret_sha256 ?? digest('no such key'), 'hex');
      const matches = timingSafeEqual(expected, Buffer.from(digest(secret), 'hex'));
      if (!row || !matches) return { refused: 'unknown or revoked API key' };
      if (row.expires_at !== null && row.expires_at <= Date.now()) return { refused: 'API key expired' };
      // Usage time, at most once a minute per key: not a write on every request.
      if (row.last_used_at === null || row.last_used_at < Date.now() - 60_000) {
        void pool
          .query(sql.unsafe`update api_keys set last_used_at = now() where id = ${id}`)
          .catch(ignoreError('last-used is a hint, written at most once a minute'));
      }
      const { secret_sha256: _s, username, role, ...key } = row;
      const verified = { key, owner: { id: row.user_id, username, role: asRole(role) } };
      verifiedKeys.set(tokenDigest, verified, readSince);
      return verified;
    },

    /** The key as it is now, with its owner's current role; null when deleted, expired or its owner is disabled. */
    async current(id: string): Promise<VerifiedKey | null> {
      const row = await pool.maybeOne(sql.type(apiKeyRow.extend({ username: z.string(), role: z.string() }))`
        select ${keyColumns}, u.username, u.role
        from api_keys k join users u on u.id = k.user_id
        where k.id = ${id} and (k.expires_at is null or k.expires_at > now()) and u.disabled_at is null`);
      if (!row) return null;
      const { username, role, ...key } = row;
      return { key, owner: { id: row.user_id, username, role: asRole(role) } };
    },

    /** Still valid (not deleted, not expired)? Long-lived streams ask this now and then. */
    isActive: (id: string) => pool.exists(sql.unsafe`select 1 from api_keys where id = ${id} and (expires_at is null or expires_at > now())`),

    async create(input: { userId: string; name: string; permissions: Permission[]; scope: string; expiresAt: Date | null; createdByKey: string | null }) {
      const id = randomBytes(8).toString('hex');
      const secret = randomBytes(32).toString('base64url');
      const record = await pool.one(sql.type(apiKeyRow)`
        insert into api_keys as k (id, user_id, name, secret_sha256, permissions, scope, expires_at, created_by_key)
        values (${id}, ${input.userId}, ${input.name}, ${digest(secret)}, ${sql.array(input.permissions, 'text')}, ${input.scope},
                ${input.expiresAt ? sql.timestamp(input.expiresAt) : null}, ${input.createdByKey})
        returning ${keyColumns}`);
      return { record, token: `${KEY_PREFIX}${id}_${secret}` };
    },

    list: (userId: string | null) =>
      pool.any(sql.type(apiKeyRow.extend({ username: z.string() }))`
        select ${keyColumns}, u.username from api_keys k join users u on u.id = k.user_id
        where ${userId === null ? sql.fragment`true` : sql.fragment`k.user_id = ${userId}`}
        order by k.created_at, k.id`),

    get: (id: string) =>
      pool.maybeOne(sql.type(apiKeyRow.extend({ role: z.string() }))`
        select ${keyColumns}, u.role from api_keys k join users u on u.id = k.user_id where k.id = ${id}`),

    /**
     * Changes name, permissions and expiry; keys minted from this key (recursively) are narrowed in the same
     * transaction so that no descendant ever holds more than its ancestor.
     */
    async update(id: string, change: { name?: string; permissions?: Permission[]; expiresAt?: Date | null }) {
      const record = await pool.transaction(async (tx: DatabaseTransactionConnection) => {
        const record = await tx.one(sql.type(apiKeyRow)`
          update api_keys as k set
            name = coalesce(${change.name ?? null}, k.name),
            permissions = ${change.permissions ? sql.array(change.permissions, 'text') : sql.fragment`k.permissions`},
            expires_at = ${change.expiresAt === undefined ? sql.fragment`k.expires_at` : change.expiresAt === null ? null : sql.timestamp(change.expiresAt)}
          where k.id = ${id} returning ${keyColumns}`);
        await tx.query(sql.unsafe`
          with recursive descendants as (
            select id from api_keys where created_by_key = ${id}
            union all
            select k.id from api_keys k join descendants d on k.created_by_key = d.id
          )
          update api_keys set
            permissions = array(select p from unnest(permissions) p where p = any(${sql.array(record.permissions, 'text')})),
            expires_at = case
              when ${record.expires_at === null ? null : sql.timestamp(new Date(record.expires_at))}::timestamptz is null then expires_at
              else least(coalesce(expires_at, 'infinity'), ${record.expires_at === null ? null : sql.timestamp(new Date(record.expires_at))}::timestamptz) end
          where id in (select id from descendants)`);
        return record;
      });
      verifiedKeys.forget(); // this replica answers with the change in force, without waiting for the notification
      return record;
    },

    /** Deletes the key and, by cascade, the keys minted from it. */
    async delete(id: string) {
      const result = await pool.query(sql.unsafe`delete from api_keys where id = ${id}`);
      verifiedKeys.forget();
      return result;
    },
  };
}

export type ApiKeyStore = ReturnType<typeof createApiKeyStore>;
