// The share's tree in PostgreSQL (see migrations/0001_tree.sql). Reads never lock. Every change runs in one
// transaction under the tree's write lock (an advisory lock per schema): changes of different requests and
// replicas apply one after another, events get ids in commit order, and a rename can rewrite the paths of a
// subtree without racing an upload into it. Storage calls never happen while the lock is held.
// The parts: the reads are here, the changes in tree-changes.ts, the rows and shared SQL in entry-rows.ts.
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { descendantsOf, entryColumns, entryRow, findEntry, type Entry, type TreeDatabase } from './entry-rows.ts';
import type { EventName } from '../events/event-types.ts';
import { createFolder, emit, lockTree, remove, rename, type UploadCommit } from './tree-changes.ts';
import { createUploadCommitter } from './upload-batch.ts';

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

/**
 * Where page `page` starts in `directory`'s listing order. A numbered page (`offset`) skips its entries by reading
 * only their (kind, name) from the listing index (an index-only scan), then starts at the entry it lands on, so
 * the page's own rows are the only ones read from the table: with OFFSET, PostgreSQL fetched every skipped row too
 * (page 100 of a 100,000-entry folder read 99,000 rows it threw away). (kind, name) is unique in a folder, so the
 * page holds the same entries OFFSET gave; past the end, the subquery is null and the page is empty.
 */
const pageStart = (directory: Entry, page: Page) => {
  if (page.after) return sql.fragment`and (kind, name) > (${page.after.kind}, ${page.after.name}::text collate "C")`;
  if (page.offset === 0) return sql.fragment``;
  return sql.fragment`and (kind, name) >= (select s.kind, s.name from entries s where s.parent_id = ${directory.id} order by s.kind, s.name offset ${page.offset} limit 1)`;
};

async function list({ pool }: TreeDatabase, directory: Entry, page: Page): Promise<{ total: number; entries: readonly Entry[] }> {
  const [total, entries] = await Promise.all([
    pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where parent_id = ${directory.id}`),
    pool.any(sql.type(entryRow)`
      select ${entryColumns} from entries where parent_id = ${directory.id} ${pageStart(directory, page)}
      order by kind, name limit ${page.limit}`),
  ]);
  return { total, entries };
}

/** Entries of `directory` in listing order, without the count: a streamed listing reads its page in such chunks. */
function listEntries({ pool }: TreeDatabase, directory: Entry, page: Page): Promise<readonly Entry[]> {
  return pool.any(sql.type(entryRow)`
    select ${entryColumns} from entries where parent_id = ${directory.id} ${pageStart(directory, page)}
    order by kind, name limit ${page.limit}`);
}

/**
 * One page of `directory` as the JSON listing's `files` array, without its brackets, serialized by PostgreSQL
 * in one statement (no object per entry in JS), with the folder's path, total and listing version read in the
 * same snapshot. Same fields, order and text as entryView() + JSON.stringify: mtime with milliseconds in UTC.
 * Null when the folder no longer exists.
 */
function listJson({ pool }: TreeDatabase, directory: Entry, page: Page): Promise<z.output<typeof listingJsonRow> | null> {
  // One row past the page says whether another page follows; its start is the page's last (kind, name).
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
          select name, path, size, mtime, sha256, kind from entries where parent_id = d.id ${pageStart(directory, page)}
          order by kind, name limit ${page.limit + 1}
        ) q
      ) s
      cross join lateral (
        select s.name, s.path, s.size, to_char(s.mtime at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as mtime,
          s.sha256 as checksum, s.kind = 'dir' as "isDirectory"
      ) v
    ) p
    where d.id = ${directory.id}`);
}

/** `text` as a LIKE pattern that matches itself only (the default escape character is the backslash). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Entries below the folder `directoryPath` whose name contains `query` (case-insensitive) or, for 8 to 64 hex
 * digits, whose sha256 starts with it; null when `directoryPath` is not a folder. Only names and checksums are
 * compared, never paths. The name test is a LIKE on the expression the trigram index holds
 * (0011_name_search_trigrams.sql), the checksum test a range on its btree, so PostgreSQL reads both from indexes (a
 * BitmapOr) instead of every entry: ~0.3 ms for a 64-digit checksum in 1,100,000 entries. Page, total and the
 * folder's existence come from one statement (the total as a window count over the same matches), so a search is
 * one round trip; only an empty page asks again, to tell "no folder" from "no match" and to count past the end.
 */
async function search(
  { pool, fold }: TreeDatabase,
  directoryPath: string,
  query: string,
  page: Page,
): Promise<{ total: number; entries: readonly Entry[] } | null> {
  const hex = /^[0-9a-f]{8,64}$/i.test(query) ? query.toLowerCase() : null;
  const checksumMatch = hex ? sql.fragment`or (sha256 >= ${hex} and sha256 < ${`${hex}g`})` : sql.fragment``;
  const where = sql.fragment`${descendantsOf(directoryPath)}
    and (lower(name collate ${fold}) like ('%' || lower(${likeLiteral(query)}::text collate ${fold}) || '%') ${checksumMatch})`;
  const entries = await pool.any(sql.type(entryRow.extend({ total: z.number() }))`
    select ${entryColumns}, count(*) over ()::int as total from entries
    where ${where} and exists (select 1 from entries d where d.path = ${directoryPath} and d.kind = 'dir')
    order by path limit ${page.limit} offset ${page.offset}`);
  if (entries[0]) return { total: entries[0].total, entries };
  const directory = await findEntry(pool, directoryPath);
  if (directory?.kind !== 'dir') return null;
  if (page.offset === 0) return { total: 0, entries: [] };
  return { total: await pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where ${where}`), entries: [] };
}

export function createTree(pool: DatabasePool, options: { eventChannel: string; caseFoldCollation: string }) {
  const db: TreeDatabase = { pool, eventChannel: options.eventChannel, fold: sql.identifier([options.caseFoldCollation]) };
  const commitUpload = createUploadCommitter(db);
  return {
    find: (path: string, connection: DatabasePool | DatabaseTransactionConnection = pool) => findEntry(connection, path),
    list: (directory: Entry, page: Page) => list(db, directory, page),
    listJson: (directory: Entry, page: Page) => listJson(db, directory, page),
    listEntries: (directory: Entry, page: Page) => listEntries(db, directory, page),
    search: (directoryPath: string, query: string, page: Page) => search(db, directoryPath, query, page),
    /** Makes `path` a file with the given stored bytes (a new entry, or the same entry with new bytes), atomically. */
    commitUpload: (input: UploadCommit) => commitUpload(input),
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
