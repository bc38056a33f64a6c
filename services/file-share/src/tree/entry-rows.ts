// The tree's rows (see migrations/0001_tree.sql) and the SQL that its reads (tree-store.ts) and its changes
// (tree-changes.ts) share.
import { sql, type DatabasePool, type DatabaseTransactionConnection, type IdentifierSqlToken } from 'slonik';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';

export const entryRow = z.object({
  id: int8,
  parent_id: int8.nullable(),
  name: z.string(),
  path: z.string(),
  kind: z.enum(['file', 'dir']),
  size: int8,
  sha256: z.string().nullable(),
  storage_key: z.string().nullable(),
  mtime: z.number(),
  /** Changes whenever this folder's listing would (migrations/0005_listing_version.sql); a string, compared only. */
  listing_version: z.string(),
});
export type Entry = z.output<typeof entryRow>;

/** Where the tree lives, and what its queries need to know about the server. */
export interface TreeDatabase {
  pool: DatabasePool;
  /** The NOTIFY channel of the share's events. */
  eventChannel: string;
  /** The collation of case-insensitive name search (pickCaseFoldCollation). */
  fold: IdentifierSqlToken;
}

export const entryColumns = sql.fragment`id, parent_id, name, path, kind, size, sha256, storage_key, mtime, listing_version::text as listing_version`;

/** Characters of the path prefix index (0006_long_paths.sql): 512 of up to 4 bytes stay under btree's 2704. */
const PREFIX_CHARS = 512;

/**
 * Rows under `path` (not `path` itself): one range scan on the path prefix index. Cutting both bounds and the path
 * to the same length keeps their byte order (C collation), so the prefix range holds every row of the full range.
 */
export const descendantsOf = (path: string) => {
  if (path === '/') return sql.fragment`path <> '/'`;
  const low = `${path}/`;
  const high = `${path}0`;
  return sql.fragment`(left(path, ${PREFIX_CHARS}) between left(${low}::text, ${PREFIX_CHARS}) and left(${high}::text, ${PREFIX_CHARS}) and path > ${low} and path < ${high})`;
};

export const findEntry = (connection: DatabasePool | DatabaseTransactionConnection, path: string) =>
  connection.maybeOne(sql.type(entryRow)`select ${entryColumns} from entries where path = ${path}`);
