// The share's tree in PostgreSQL (see migrations/0001_tree.sql). Reads never lock. Every change runs in one
// transaction under the tree's write lock (an advisory lock per schema): changes of different requests and
// replicas apply one after another, events get ids in commit order, and a rename can rewrite the paths of a
// subtree without racing an upload into it. Storage calls never happen while the lock is held.
import { HttpError, conflict, notFound } from '@boxyard/kit';
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { checkNewPath, joinPath, MAX_PATH_BYTES, parentOf } from '../paths/share-path.ts';
import type { EventName } from '../events/event-types.ts';
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

const entryColumns = sql.fragment`id, parent_id, name, path, kind, size, sha256, storage_key, mtime, listing_version::text as listing_version`;

/** Characters of the path prefix index (0006_long_paths.sql): 512 of up to 4 bytes stay under btree's 2704. */
const PREFIX_CHARS = 512;

/**
 * Rows under `path` (not `path` itself): one range scan on the path prefix index. Cutting both bounds and the path
 * to the same length keeps their byte order (C collation), so the prefix range holds every row of the full range.
 */
const descendantsOf = (path: string) => {
  if (path === '/') return sql.fragment`path <> '/'`;
  const low = `${path}/`;
  const high = `${path}0`;
  return sql.fragment`(left(path, ${PREFIX_CHARS}) between left(${low}::text, ${PREFIX_CHARS}) and left(${high}::text, ${PREFIX_CHARS}) and path > ${low} and path < ${high})`;
};

const listingJsonRow = z.object({ version: z.string(), path: z.string(), total: z.number(), files: z.string() });

export interface Page {
  offset: number;
  limit: number;
}

export interface UploadCommit {
  path: string;
  storageKey: string;
  size: number;
  sha256: string;
  userId: string | null;
  /** Replacing an existing file is allowed (the caller holds `delete`). */
  mayReplace: boolean;
}

export interface UploadResult {
  entry: Entry;
  created: boolean;
  /** Storage key of the bytes this upload replaced, now in object_garbage. */
  replacedKey: string | null;
}

export function createTree(pool: DatabasePool, options: { eventChannel: string; caseFoldCollation: string }) {
  const fold = sql.identifier([options.caseFoldCollation]);

  const lockTree = (tx: DatabaseTransactionConnection) =>
    tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('boxyard-file-share-tree:' || current_schema()))`);

  /** Records an event and wakes every replica's listener (NOTIFY is delivered on commit). */
  async function emit(tx: DatabaseTransactionConnection, name: EventName, paths: string[], data: Record<string, unknown>): Promise<void> {
    await tx.query(sql.unsafe`
      with inserted as (
        insert into events (name, paths, data) values (${name}, ${sql.array(paths, 'text')}, ${sql.jsonb(data as never)}) returning id
      )
      select pg_notify(${options.eventChannel}, id::text) from inserted`);
  }

  const find = (path: string, connection: DatabasePool | DatabaseTransactionConnection = pool) =>
    connection.maybeOne(sql.type(entryRow)`select ${entryColumns} from entries where path = ${path}`);

  /** mkdir -p inside a locked transaction; 409 when a name on the way is a file. */
  async function ensureDirectory(tx: DatabaseTransactionConnection, path: string, userId: string | null): Promise<Entry> {
    const existing = await find(path, tx);
    if (existing) {
      if (existing.kind !== 'dir') throw conflict(`${path} is a file, not a folder`);
      return existing;
    }
    const parent = await ensureDirectory(tx, parentOf(path), userId);
    checkNewPath(path);
    const created = await tx.one(sql.type(entryRow)`
      insert into entries (parent_id, name, path, kind, created_by)
      values (${parent.id}, ${path.slice(path.lastIndexOf('/') + 1)}, ${path}, 'dir', ${userId})
      returning ${entryColumns}`);
    await emit(tx, 'folder-created', [path], { folderPath: path });
    return created;
  }

  return {
    find,

    async list(directory: Entry, page: Page): Promise<{ total: number; entries: readonly Entry[] }> {
      const [total, entries] = await Promise.all([
        pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where parent_id = ${directory.id}`),
        pool.any(sql.type(entryRow)`
          select ${entryColumns} from entries where parent_id = ${directory.id}
          order by kind, name limit ${page.limit} offset ${page.offset}`),
      ]);
      return { total, entries };
    },

    /**
     * One page of `directory` as the JSON listing's `files` array, without its brackets, serialized by PostgreSQL
     * in one statement (no object per entry in JS), with the folder's path, total and listing version read in the
     * same snapshot. Same fields, order and text as entryView() + JSON.stringify: mtime with milliseconds in UTC.
     * Null when the folder no longer exists.
     */
    listJson(directory: Entry, page: Page): Promise<z.output<typeof listingJsonRow> | null> {
      return pool.maybeOne(sql.type(listingJsonRow)`
        select d.listing_version::text as version, d.path,
          (select count(*)::int from entries where parent_id = d.id) as total,
          coalesce((
            select string_agg(row_to_json(v)::text, ',' order by s.kind, s.name)
            from (
              select name, path, size, mtime, sha256, kind from entries where parent_id = d.id
              order by kind, name limit ${page.limit} offset ${page.offset}
            ) s
            cross join lateral (
              select s.name, s.path, s.size, to_char(s.mtime at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as mtime,
                s.sha256 as checksum, s.kind = 'dir' as "isDirectory"
            ) v
          ), '') as files
        from entries d where d.id = ${directory.id}`);
    },

    /**
     * Entries below `directory` whose name contains `query` (case-insensitive) or, for 8 to 64 hex digits, whose
     * sha256 starts with it. Only names and checksums are compared, never paths.
     */
    async search(directory: Entry, query: string, page: Page): Promise<{ total: number; entries: readonly Entry[] }> {
      const hex = /^[0-9a-f]{8,64}$/i.test(query) ? query.toLowerCase() : null;
      const checksumMatch = hex ? sql.fragment`or (sha256 >= ${hex} and sha256 < ${`${hex}g`})` : sql.fragment``;
      const where = sql.fragment`${descendantsOf(directory.path)}
        and (strpos(lower(name collate ${fold}), lower(${query}::text collate ${fold})) > 0 ${checksumMatch})`;
      const [total, entries] = await Promise.all([
        pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where ${where}`),
        pool.any(sql.type(entryRow)`select ${entryColumns} from entries where ${where} order by path limit ${page.limit} offset ${page.offset}`),
      ]);
      return { total, entries };
    },

    /** Makes `path` a file with the given stored bytes: a new entry, or the same entry with new bytes. */
    commitUpload(input: UploadCommit): Promise<UploadResult> {
      return pool.transaction(async (tx) => {
        await lockTree(tx);
        checkNewPath(input.path);
        const parent = await ensureDirectory(tx, parentOf(input.path), input.userId);
        const existing = await find(input.path, tx);
        let entry: Entry;
        if (existing?.kind === 'dir') throw conflict(`${input.path} is a folder`);
        if (existing) {
          if (!input.mayReplace) throw new HttpError(403, `${input.path} exists; replacing a file needs the delete permission`);
          entry = await tx.one(sql.type(entryRow)`
            update entries set storage_key = ${input.storageKey}, size = ${input.size}, sha256 = ${input.sha256}, mtime = now()
            where id = ${existing.id} returning ${entryColumns}`);
          await tx.query(sql.unsafe`
            insert into object_garbage (storage_key, delete_after) values (${existing.storage_key}, now())
            on conflict (storage_key) do update set delete_after = now()`);
        } else {
          entry = await tx.one(sql.type(entryRow)`
            insert into entries (parent_id, name, path, kind, size, sha256, storage_key, created_by)
            values (${parent.id}, ${input.path.slice(input.path.lastIndexOf('/') + 1)}, ${input.path}, 'file', ${input.size}, ${input.sha256}, ${input.storageKey}, ${input.userId})
            returning ${entryColumns}`);
        }
        // The bytes are referenced now: no longer garbage.
        await tx.query(sql.unsafe`delete from object_garbage where storage_key = ${input.storageKey}`);
        await emit(tx, 'checksum-update', [input.path], {
          filePath: input.path,
          checksum: input.sha256,
          size: input.size,
          mtime: new Date(entry.mtime).toISOString(),
        });
        return { entry, created: !existing, replacedKey: existing?.storage_key ?? null };
      });
    },

    /** Creates `name` in the existing folder `directory`; 409 when the name is taken. */
    createFolder(directoryPath: string, name: string, userId: string | null): Promise<Entry> {
      return pool.transaction(async (tx) => {
        await lockTree(tx);
        const parent = await find(directoryPath, tx);
        if (!parent) throw notFound(`${directoryPath} does not exist`);
        if (parent.kind !== 'dir') throw conflict(`${directoryPath} is a file, not a folder`);
        const path = joinPath(directoryPath, name);
        checkNewPath(path);
        if (await find(path, tx)) throw conflict(`${path} already exists`);
        return ensureDirectory(tx, path, userId);
      });
    },

    /** Renames a file or folder within its folder; a folder's descendants move with it in the same transaction. */
    rename(path: string, newName: string): Promise<{ entry: Entry; oldPath: string }> {
      return pool.transaction(async (tx) => {
        await lockTree(tx);
        const entry = await find(path, tx);
        if (!entry) throw notFound(`${path} does not exist`);
        const newPath = joinPath(parentOf(path), newName);
        if (newPath === path) return { entry, oldPath: path };
        checkNewPath(newPath);
        if (await find(newPath, tx)) throw conflict(`${newPath} already exists`);
        if (entry.kind === 'dir') {
          const longest = await tx.oneFirst(sql.type(z.object({ bytes: z.number().nullable() }))`
            select max(octet_length(path))::int as bytes from entries where ${descendantsOf(path)}`);
          if (longest !== null && longest - Buffer.byteLength(path) + Buffer.byteLength(newPath) > MAX_PATH_BYTES) {
            throw new HttpError(400, `renaming would make a path inside ${path} longer than ${MAX_PATH_BYTES} bytes`);
          }
          await tx.query(sql.unsafe`
            update entries set path = ${newPath} || substr(path, char_length(${path}::text) + 1)
            where ${descendantsOf(path)}`);
        }
        const renamed = await tx.one(sql.type(entryRow)`
          update entries set name = ${newName}, path = ${newPath} where id = ${entry.id} returning ${entryColumns}`);
        await emit(tx, 'file-renamed', [path, newPath], { oldPath: path, newPath, isDirectory: entry.kind === 'dir' });
        return { entry: renamed, oldPath: path };
      });
    },

    /** Deletes a file, or a folder with everything in it; their bytes are queued for deletion after the commit. */
    remove(path: string): Promise<{ entry: Entry; files: number }> {
      return pool.transaction(async (tx) => {
        await lockTree(tx);
        const entry = await find(path, tx);
        if (!entry) throw notFound(`${path} does not exist`);
        const queued = await tx.oneFirst(sql.type(z.object({ count: z.number() }))`
          with garbage as (
            insert into object_garbage (storage_key, delete_after)
            select storage_key, now() from entries
            where (path = ${path} or ${descendantsOf(path)}) and storage_key is not null
            on conflict (storage_key) do update set delete_after = now()
            returning 1
          ) select count(*)::int as count from garbage`);
        await tx.query(sql.unsafe`delete from entries where id = ${entry.id}`); // children cascade
        await emit(tx, 'file-deleted', [path], { filePath: path, isDirectory: entry.kind === 'dir' });
        return { entry, files: queued };
      });
    },
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
