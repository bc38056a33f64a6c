// Changes of the tree: uploads, new folders, renames, deletions. Each runs in one transaction under the tree's
// write lock (tree-store.ts says why) and records its event.
import { HttpError, conflict, notFound } from '@boxyard/kit';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { EventName } from '../events/event-types.ts';
import { checkNewPath, joinPath, MAX_PATH_BYTES, parentOf } from '../paths/share-path.ts';
import { descendantsOf, entryColumns, entryRow, findEntry, type Entry, type TreeDatabase } from './entry-rows.ts';

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

export const lockTree = (tx: DatabaseTransactionConnection) =>
  tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('boxyard-file-share-tree:' || current_schema()))`);

/** Records an event and wakes every replica's listener (NOTIFY is delivered on commit). */
export async function emit(
  db: TreeDatabase,
  tx: DatabaseTransactionConnection,
  name: EventName,
  paths: string[],
  data: Record<string, unknown>,
): Promise<void> {
  await tx.query(sql.unsafe`
    with inserted as (
      insert into events (name, paths, data) values (${name}, ${sql.array(paths, 'text')}, ${sql.jsonb(data as never)}) returning id
    )
    select pg_notify(${db.eventChannel}, id::text) from inserted`);
}

/** mkdir -p inside a locked transaction; 409 when a name on the way is a file. */
async function ensureDirectory(db: TreeDatabase, tx: DatabaseTransactionConnection, path: string, userId: string | null): Promise<Entry> {
  const existing = await findEntry(tx, path);
  if (existing) {
    if (existing.kind !== 'dir') throw conflict(`${path} is a file, not a folder`);
    return existing;
  }
  const parent = await ensureDirectory(db, tx, parentOf(path), userId);
  checkNewPath(path);
  const created = await tx.one(sql.type(entryRow)`
    insert into entries (parent_id, name, path, kind, created_by)
    values (${parent.id}, ${path.slice(path.lastIndexOf('/') + 1)}, ${path}, 'dir', ${userId})
    returning ${entryColumns}`);
  await emit(db, tx, 'folder-created', [path], { folderPath: path });
  return created;
}

/**
 * A new file's row, its bytes taken off the garbage list, and its event with the NOTIFY, in one statement: every
 * commit waits for the tree lock, so each round trip made while holding it is paid by all uploads queued behind it
 * (10,000 uploads of 10 KiB at 8 clients: 8 round trips under the lock per upload → 5). The event's mtime is the
 * row's, in the form toISOString gives (as the JSON listing writes it).
 */
function insertFile(db: TreeDatabase, tx: DatabaseTransactionConnection, input: UploadCommit, parent: Entry): Promise<Entry> {
  return tx.one(sql.type(entryRow)`
    with inserted as (
      insert into entries (parent_id, name, path, kind, size, sha256, storage_key, created_by)
      values (${parent.id}, ${input.path.slice(input.path.lastIndexOf('/') + 1)}, ${input.path}, 'file', ${input.size}, ${input.sha256}, ${input.storageKey}, ${input.userId})
      returning ${entryColumns}
    ), referenced as (
      delete from object_garbage where storage_key = ${input.storageKey}
    ), event as (
      insert into events (name, paths, data)
      select 'checksum-update', ${sql.array([input.path], 'text')}, jsonb_build_object('filePath', i.path, 'checksum', i.sha256, 'size', i.size,
        'mtime', to_char(i.mtime at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      from inserted i
      returning id
    )
    select i.*, pg_notify(${db.eventChannel}, e.id::text) as notified from inserted i, event e`);
}

/** Makes `path` a file with the given stored bytes: a new entry, or the same entry with new bytes. */
export function commitUpload(db: TreeDatabase, input: UploadCommit): Promise<UploadResult> {
  return db.pool.transaction(async (tx) => {
    await lockTree(tx);
    return commitLocked(db, tx, input);
  });
}

/** commitUpload's work, inside a transaction that holds the tree lock (upload-batch.ts runs several in one). */
export async function commitLocked(db: TreeDatabase, tx: DatabaseTransactionConnection, input: UploadCommit): Promise<UploadResult> {
  checkNewPath(input.path);
  // The parent and the path in one read; a missing parent is made (with its own missing parents) as before.
  const parentPath = parentOf(input.path);
  const found = await tx.any(sql.type(entryRow)`select ${entryColumns} from entries where path = any(${sql.array([parentPath, input.path], 'text')})`);
  const foundParent = found.find((e) => e.path === parentPath);
  const parent = foundParent?.kind === 'dir' ? foundParent : await ensureDirectory(db, tx, parentPath, input.userId);
  const existing = found.find((e) => e.path === input.path) ?? null;
  if (existing?.kind === 'dir') throw conflict(`${input.path} is a folder`);
  if (!existing) return { entry: await insertFile(db, tx, input, parent), created: true, replacedKey: null };
  if (!input.mayReplace) throw new HttpError(403, `${input.path} exists; replacing a file needs the delete permission`);
  const entry = await tx.one(sql.type(entryRow)`
    update entries set storage_key = ${input.storageKey}, size = ${input.size}, sha256 = ${input.sha256}, mtime = now()
    where id = ${existing.id} returning ${entryColumns}`);
  await tx.query(sql.unsafe`
    insert into object_garbage (storage_key, delete_after) values (${existing.storage_key}, now())
    on conflict (storage_key) do update set delete_after = now()`);
  // The bytes are referenced now: no longer garbage.
  await tx.query(sql.unsafe`delete from object_garbage where storage_key = ${input.storageKey}`);
  await emit(db, tx, 'checksum-update', [input.path], {
    filePath: input.path,
    checksum: input.sha256,
    size: input.size,
    mtime: new Date(entry.mtime).toISOString(),
  });
  return { entry, created: false, replacedKey: existing.storage_key };
}

/** Creates `name` in the existing folder `directory`; 409 when the name is taken. */
export function createFolder(db: TreeDatabase, directoryPath: string, name: string, userId: string | null): Promise<Entry> {
  return db.pool.transaction(async (tx) => {
    await lockTree(tx);
    const parent = await findEntry(tx, directoryPath);
    if (!parent) throw notFound(`${directoryPath} does not exist`);
    if (parent.kind !== 'dir') throw conflict(`${directoryPath} is a file, not a folder`);
    const path = joinPath(directoryPath, name);
    checkNewPath(path);
    if (await findEntry(tx, path)) throw conflict(`${path} already exists`);
    return ensureDirectory(db, tx, path, userId);
  });
}

/** Moves a folder's descendants to `newPath` (within the transaction of its rename). */
async function moveDescendants(tx: DatabaseTransactionConnection, path: string, newPath: string): Promise<void> {
  const longest = await tx.oneFirst(sql.type(z.object({ bytes: z.number().nullable() }))`
    select max(octet_length(path))::int as bytes from entries where ${descendantsOf(path)}`);
  if (longest !== null && longest - Buffer.byteLength(path) + Buffer.byteLength(newPath) > MAX_PATH_BYTES) {
    throw new HttpError(400, `renaming would make a path inside ${path} longer than ${MAX_PATH_BYTES} bytes`);
  }
  await tx.query(sql.unsafe`
    update entries set path = ${newPath} || substr(path, char_length(${path}::text) + 1)
    where ${descendantsOf(path)}`);
}

/** Renames a file or folder within its folder; a folder's descendants move with it in the same transaction. */
export function rename(db: TreeDatabase, path: string, newName: string): Promise<{ entry: Entry; oldPath: string }> {
  return db.pool.transaction(async (tx) => {
    await lockTree(tx);
    const entry = await findEntry(tx, path);
    if (!entry) throw notFound(`${path} does not exist`);
    const newPath = joinPath(parentOf(path), newName);
    if (newPath === path) return { entry, oldPath: path };
    checkNewPath(newPath);
    if (await findEntry(tx, newPath)) throw conflict(`${newPath} already exists`);
    if (entry.kind === 'dir') await moveDescendants(tx, path, newPath);
    const renamed = await tx.one(sql.type(entryRow)`
      update entries set name = ${newName}, path = ${newPath} where id = ${entry.id} returning ${entryColumns}`);
    await emit(db, tx, 'file-renamed', [path, newPath], { oldPath: path, newPath, isDirectory: entry.kind === 'dir' });
    return { entry: renamed, oldPath: path };
  });
}

/** Deletes a file, or a folder with everything in it; their bytes are queued for deletion after the commit. */
export function remove(db: TreeDatabase, path: string): Promise<{ entry: Entry; files: number }> {
  return db.pool.transaction(async (tx) => {
    await lockTree(tx);
    const entry = await findEntry(tx, path);
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
    await emit(db, tx, 'file-deleted', [path], { filePath: path, isDirectory: entry.kind === 'dir' });
    return { entry, files: queued };
  });
}
