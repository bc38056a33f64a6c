// The share's tree in PostgreSQL (see migrations/0001_tree.sql). Reads never lock. Every change runs in one
// transaction under the tree's write lock (an advisory lock per schema): changes of different requests and
// replicas apply one after another, events get ids in commit order, and a rename can rewrite the paths of a
// subtree without racing an upload into it. Storage calls never happen while the lock is held.
// The parts: the reads are here, the changes in tree-changes.ts, the rows and shared SQL in entry-rows.ts.
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { descendantsOf, entryColumns, entryRow, findEntry, type Entry, type TreeDatabase } from './entry-rows.ts';
import type { EventName } from '../events/event-types.ts';
import { commitUpload, createFolder, emit, lockTree, remove, rename, type UploadCommit } from './tree-changes.ts';

export { entryRow, type Entry } from './entry-rows.ts';
export type { UploadCommit, UploadResult } from './tree-changes.ts';

const listingJsonRow = z.object({
  version: z.string(),
  path: z.string(),
  total: z.number(),
  files: z.string(),
  /** The page's last entry, when more follow it (the next page's keyset position). */
  last_kind: z.enum(['file', 'dir']).nullable(),
  last_name: z.string().nullable(),
});

/** A place in a folder's listing order (kind, then name in byte order): the next page starts after it. */
export interface ListingPosition {
  kind: 'file' | 'dir';
  name: string;
}

export interface Page {
  offset: number;
  limit: number;
  /** Keyset paging: entries after this position (then `offset` is 0), read from the listing index, never skipped. */
  after?: ListingPosition | undefined;
}

async function list({ pool }: TreeDatabase, directory: Entry, page: Page): Promise<{ total: number; entries: readonly Entry[] }> {
  const [total, entries] = await Promise.all([
    pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where parent_id = ${directory.id}`),
    pool.any(sql.type(entryRow)`
      select ${entryColumns} from entries where parent_id = ${directory.id}
      order by kind, name limit ${page.limit} offset ${page.offset}`),
  ]);
  return { total, entries };
}

/** Entries of `directory` in listing order, without the count: a streamed listing reads its page in such chunks. */
function listEntries({ pool }: TreeDatabase, directory: Entry, page: Page): Promise<readonly Entry[]> {
  const after = page.after ? sql.fragment`and (kind, name) > (${page.after.kind}, ${page.after.name}::text collate "C")` : sql.fragment``;
  return pool.any(sql.type(entryRow)`
    select ${entryColumns} from entries where parent_id = ${directory.id} ${after}
    order by kind, name limit ${page.limit} offset ${page.offset}`);
}

/**
 * One page of `directory` as the JSON listing's `files` array, without its brackets, serialized by PostgreSQL
 * in one statement (no object per entry in JS), with the folder's path, total and listing version read in the
 * same snapshot. Same fields, order and text as entryView() + JSON.stringify: mtime with milliseconds in UTC.
 * Null when the folder no longer exists.
 */
function listJson({ pool }: TreeDatabase, directory: Entry, page: Page): Promise<z.output<typeof listingJsonRow> | null> {
  // One row past the page says whether another page follows; its start is the page's last (kind, name).
  const after = page.after ? sql.fragment`and (kind, name) > (${page.after.kind}, ${page.after.name}::text collate "C")` : sql.fragment``;
  return pool.maybeOne(sql.type(listingJsonRow)`
    select d.listing_version::text as version, d.path,
      (select count(*)::int from entries where parent_id = d.id) as total,
      coalesce(p.files, '') as files, p.last_kind, p.last_name
    from entries d
    cross join lateral (
      select string_agg(row_to_json(v)::text, ',' order by s.n) filter (where s.n <= ${page.limit}) as files,
        case when count(*) > ${page.limit} then max(s.kind) filter (where s.n = ${page.limit}) end as last_kind,
        case when count(*) > ${page.limit} then max(s.name) filter (where s.n = ${page.limit}) end as last_name
      from (
        select q.*, row_number() over (order by q.kind, q.name) as n
        from (
          select name, path, size, mtime, sha256, kind from entries where parent_id = d.id ${after}
          order by kind, name limit ${page.limit + 1} offset ${page.offset}
        ) q
      ) s
      cross join lateral (
        select s.name, s.path, s.size, to_char(s.mtime at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as mtime,
          s.sha256 as checksum, s.kind = 'dir' as "isDirectory"
      ) v
    ) p
    where d.id = ${directory.id}`);
}

/**
 * Entries below `directory` whose name contains `query` (case-insensitive) or, for 8 to 64 hex digits, whose
 * sha256 starts with it. Only names and checksums are compared, never paths.
 */
async function search({ pool, fold }: TreeDatabase, directory: Entry, query: string, page: Page): Promise<{ total: number; entries: readonly Entry[] }> {
  const hex = /^[0-9a-f]{8,64}$/i.test(query) ? query.toLowerCase() : null;
  const checksumMatch = hex ? sql.fragment`or (sha256 >= ${hex} and sha256 < ${`${hex}g`})` : sql.fragment``;
  const where = sql.fragment`${descendantsOf(directory.path)}
    and (strpos(lower(name collate ${fold}), lower(${query}::text collate ${fold})) > 0 ${checksumMatch})`;
  const [total, entries] = await Promise.all([
    pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where ${where}`),
    pool.any(sql.type(entryRow)`select ${entryColumns} from entries where ${where} order by path limit ${page.limit} offset ${page.offset}`),
  ]);
  return { total, entries };
}

export function createTree(pool: DatabasePool, options: { eventChannel: string; caseFoldCollation: string }) {
  const db: TreeDatabase = { pool, eventChannel: options.eventChannel, fold: sql.identifier([options.caseFoldCollation]) };
  return {
    find: (path: string, connection: DatabasePool | DatabaseTransactionConnection = pool) => findEntry(connection, path),
    list: (directory: Entry, page: Page) => list(db, directory, page),
    listJson: (directory: Entry, page: Page) => listJson(db, directory, page),
    listEntries: (directory: Entry, page: Page) => listEntries(db, directory, page),
    search: (directory: Entry, query: string, page: Page) => search(db, directory, query, page),
    commitUpload: (input: UploadCommit) => commitUpload(db, input),
    createFolder: (directoryPath: string, name: string, userId: string | null) => createFolder(db, directoryPath, name, userId),
    rename: (path: string, newName: string) => rename(db, path, newName),
    remove: (path: string) => remove(db, path),
    /** An event that is no change of the tree (share link activity), in order with the tree's own. */
    recordEvent: (name: EventName, paths: string[], data: Record<string, unknown>) =>
      pool.transaction(async (tx) => {
        await lockTree(tx);
        await emit(db, tx, name, paths, data);
      }),
  };
}

export type Tree = ReturnType<typeof createTree>;

/** The collation used for case-insensitive name search: Unicode-aware when the server has one. */
export async function pickCaseFoldCollation(pool: DatabasePool): Promise<string> {
  const found = await pool.maybeOneFirst(sql.type(z.object({ collname: z.string() }))`
    select collname from pg_collation where collname in ('pg_c_utf8', 'und-x-icu')
    order by collname = 'pg_c_utf8' desc limit 1`);
  return found ?? 'default';
}
