// Share links and file requests in PostgreSQL (migrations/0008_shares.sql). A link's token is its URL (128 random
// bits); its id names it in the API and in events. Every counted use is one conditional UPDATE, so a use limit holds
// across replicas without a lock; what the link may still do is decided by link-access.ts from the row read here.
import { randomBytes } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';
import { PERMISSIONS } from '../auth/principal.ts';

export const SHARE_KINDS = ['share', 'request'] as const;
export type ShareKind = (typeof SHARE_KINDS)[number];

/** 16 random bytes as base64url: 22 characters, 128 bits. */
export const newToken = () => randomBytes(16).toString('base64url');
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{22}$/;

export const linkRow = z.object({
  id: z.string(),
  token: z.string(),
  kind: z.enum(SHARE_KINDS),
  entry_id: int8,
  /** The entry's path now (links follow renames). */
  path: z.string(),
  entry_kind: z.enum(['file', 'dir']),
  created_by: z.string(),
  created_by_key: z.string().nullable(),
  password_hash: z.string().nullable(),
  expires_at: z.number(),
  max_uses: z.number().nullable(),
  uses: z.number(),
  max_file_bytes: int8.nullable(),
  revoked_at: z.number().nullable(),
  created_at: z.number(),
  last_used_at: z.number().nullable(),
});
export type LinkRecord = z.output<typeof linkRow>;

/** The link with what its creator may do today: the account (not disabled) and, for a key-made link, the key. */
export const linkWithCreatorRow = linkRow.extend({
  creator_username: z.string().nullable(),
  creator_role: z.string().nullable(),
  key_permissions: z.array(z.enum(PERMISSIONS)).nullable(),
  key_scope: z.string().nullable(),
  key_expires_at: z.number().nullable(),
});
export type LinkWithCreator = z.output<typeof linkWithCreatorRow>;

const linkColumns = sql.fragment`l.id, l.token, l.kind, l.entry_id, e.path, e.kind as entry_kind, l.created_by, l.created_by_key,
  l.password_hash, l.expires_at, l.max_uses, l.uses, l.max_file_bytes, l.revoked_at, l.created_at, l.last_used_at`;

const withCreator = sql.fragment`select ${linkColumns}, u.username as creator_username, u.role as creator_role,
    k.permissions as key_permissions, k.scope as key_scope, k.expires_at as key_expires_at
  from share_links l
  join entries e on e.id = l.entry_id
  left join users u on u.id = l.created_by and u.disabled_at is null
  left join api_keys k on k.id = l.created_by_key`;

export interface NewLink {
  kind: ShareKind;
  entryId: number;
  createdBy: string;
  createdByKey: string | null;
  passwordHash: string | null;
  expiresAt: Date;
  maxUses: number | null;
  maxFileBytes: number | null;
}

const arrivalRow = z.object({ path: z.string(), size: int8, sha256: z.string(), arrived_at: z.number() });
export type Arrival = z.output<typeof arrivalRow>;

export function createShareStore(pool: DatabasePool) {
  const byId = (id: string) => pool.maybeOne(sql.type(linkWithCreatorRow)`${withCreator} where l.id = ${id}::uuid`);
  return {
    async create(link: NewLink): Promise<LinkWithCreator> {
      const id = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
        insert into share_links (token, kind, entry_id, created_by, created_by_key, password_hash, expires_at, max_uses, max_file_bytes)
        values (${newToken()}, ${link.kind}, ${link.entryId}, ${link.createdBy}::uuid, ${link.createdByKey}, ${link.passwordHash},
          ${link.expiresAt.toISOString()}::timestamptz, ${link.maxUses}, ${link.maxFileBytes})
        returning id`);
      return (await byId(id))!;
    },
    byId,
    /** The link a URL names, with its creator as of now; null for an unknown token. */
    byToken: (token: string) => pool.maybeOne(sql.type(linkWithCreatorRow)`${withCreator} where l.token = ${token}`),
    /** A user's links (or a key's, or everyone's), newest first. */
    list: (filter: { userId?: string; keyId?: string }, limit = 1000) =>
      pool.any(sql.type(linkWithCreatorRow)`${withCreator}
        where (${filter.userId ?? null}::uuid is null or l.created_by = ${filter.userId ?? null}::uuid)
          and (${filter.keyId ?? null}::text is null or l.created_by_key = ${filter.keyId ?? null})
        order by l.created_at desc, l.id limit ${limit}`),
    /** Revokes a link that is not revoked yet; false when it already was. */
    revoke: async (id: string) =>
      (await pool.query(sql.unsafe`update share_links set revoked_at = now() where id = ${id}::uuid and revoked_at is null`)).rowCount === 1,
    /**
     * Takes one use if the link still has one (not revoked, not expired, under its limit): true when taken. One
     * statement, so two replicas can never both take the last use.
     */
    takeUse: async (id: string) =>
      (
        await pool.query(sql.unsafe`
          update share_links set uses = uses + 1, last_used_at = now()
          where id = ${id}::uuid and revoked_at is null and expires_at > now() and (max_uses is null or uses < max_uses)`)
      ).rowCount === 1,
    /** Gives back a use taken for an upload that did not land. */
    returnUse: (id: string) => pool.query(sql.unsafe`update share_links set uses = greatest(uses - 1, 0) where id = ${id}::uuid`),
    /** Last use time of a look that is not counted (a listing page), at most once a minute per link. */
    touch: (id: string) =>
      pool.query(
        sql.unsafe`update share_links set last_used_at = now() where id = ${id}::uuid and (last_used_at is null or last_used_at < now() - interval '1 minute')`,
      ),
    recordArrival: (id: string, arrival: { path: string; size: number; sha256: string; address: string }) =>
      pool.query(
        sql.unsafe`insert into share_arrivals (link_id, path, size, sha256, address) values (${id}::uuid, ${arrival.path}, ${arrival.size}, ${arrival.sha256}, ${arrival.address})`,
      ),
    arrivals: (id: string, limit = 100) =>
      pool.any(sql.type(arrivalRow)`select path, size, sha256, arrived_at from share_arrivals where link_id = ${id}::uuid order by id desc limit ${limit}`),
  };
}

export type ShareStore = ReturnType<typeof createShareStore>;
