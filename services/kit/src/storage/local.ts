// Object storage on a directory (a PersistentVolume when there is no S3). Layout under `root`:
//   objects/<key>   the objects, one file per key, `/` in keys making directories
//   .tmp/<uuid>     uploads in progress; renamed into objects/ only once complete, synced and verified
// rename(2) within one filesystem is atomic, so a reader sees the old object or the new one, never half of one,
// and a reader that already opened the old file keeps reading it whole. A crash can leave files in .tmp/ (never
// in objects/); sweepAbandonedUploads deletes those no longer written to.
// The parts: local-layout.ts maps keys to files, local-put.ts writes them.
import { randomUUID } from 'node:crypto';
import type { Stats } from 'node:fs';
import { mkdir, open, readdir, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { resolveRange } from './byte-range.ts';
import { InvalidKeyError, ObjectNotFoundError, StorageUnavailableError } from './errors.ts';
import { FileBody } from './file-body.ts';
import { validateKey, validatePrefix } from './keys.ts';
import { dirPathOf, errno, localLayout, pathOf, toStorageError, type LocalLayout } from './local-layout.ts';
import { putObject } from './local-put.ts';
import type { ByteRange, ObjectInfo, ObjectStore } from './types.ts';
import { ignoreError } from '../errors/ignore-error.ts';

export interface LocalStoreOptions {
  /** An existing directory (not created here, so a missing volume mount fails loudly instead of filling the container's disk). */
  root: string;
}

function infoOf(key: string, stats: Stats): ObjectInfo {
  // inode + size + mtime: a replaced object is a new inode (rename), so the validator changes with it.
  const etag = [stats.ino, stats.size, Math.round(stats.mtimeMs * 1000)].map((n) => n.toString(16)).join('-');
  return { key, size: stats.size, lastModified: stats.mtime, etag };
}

/** Removes the now-empty directories between a deleted file and objects/ (a missing one is fine). */
async function pruneEmptyParents({ objectsDir }: LocalLayout, path: string): Promise<void> {
  for (let dir = dirname(path); dir.startsWith(objectsDir + sep); dir = dirname(dir)) {
    try {
      await rmdir(dir);
    } catch {
      return; // not empty (or already gone): nothing above it can be empty
    }
  }
}

async function statFile(key: string, path: string): Promise<ObjectInfo | undefined> {
  try {
    const stats = await stat(path);
    return stats.isFile() ? infoOf(key, stats) : undefined;
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return undefined;
    throw toStorageError(error, key);
  }
}

/**
 * Depth-first walk in key byte order: a directory `d` sorts as `d/`, so 'a-c' (0x2d) comes before the
 * keys under 'a/' (0x2f), exactly as a sorted flat listing of whole keys would have it.
 */
async function* walk(layout: LocalLayout, dirKey: string, prefix: string): AsyncGenerator<ObjectInfo> {
  let entries;
  try {
    entries = await readdir(dirPathOf(layout, dirKey), { withFileTypes: true });
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return;
    throw error;
  }
  const named = entries
    .filter((entry) => entry.isDirectory() || entry.isFile())
    .map((entry) => {
      const key = dirKey === '' ? entry.name : `${dirKey}/${entry.name}`;
      const isDirectory = entry.isDirectory();
      return { key, isDirectory, sortKey: Buffer.from(isDirectory ? `${key}/` : key) };
    })
    .sort((a, b) => Buffer.compare(a.sortKey, b.sortKey));
  for (const { key, isDirectory } of named) {
    if (isDirectory) {
      if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* walk(layout, key, prefix);
    } else if (key.startsWith(prefix)) {
      const info = await statFile(key, dirPathOf(layout, key));
      if (info) yield info; // skipped when deleted since readdir
    }
  }
}

function list(layout: LocalLayout, prefix: string): AsyncIterable<ObjectInfo> {
  validatePrefix(prefix);
  const slash = prefix.lastIndexOf('/');
  return walk(layout, slash === -1 ? '' : prefix.slice(0, slash), prefix); // start at the prefix's directory
}

async function remove(layout: LocalLayout, key: string): Promise<void> {
  const path = pathOf(layout, key);
  try {
    await unlink(path);
  } catch (error) {
    const code = errno(error);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return; // no such object
    throw toStorageError(error, key);
  }
  await pruneEmptyParents(layout, path);
}

async function deletePrefix(layout: LocalLayout, prefix: string): Promise<number> {
  if (prefix === '') throw new InvalidKeyError(prefix, 'refusing to delete every object; pass a prefix');
  let count = 0;
  for await (const info of list(layout, prefix)) {
    await remove(layout, info.key);
    count++;
  }
  return count;
}

async function getObject(layout: LocalLayout, key: string, range?: ByteRange): Promise<Readable> {
  const path = pathOf(layout, key);
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') throw new ObjectNotFoundError(key);
    throw toStorageError(error, key);
  }
  try {
    const stats = await handle.stat(); // size from the open file: consistent with what the stream will read
    if (!stats.isFile()) throw new ObjectNotFoundError(key); // a "directory" key is not an object
    const bounds = resolveRange(range, stats.size) ?? { start: 0, end: stats.size - 1 };
    return new FileBody(handle, bounds.start, bounds.end);
  } catch (error) {
    await handle.close();
    throw error;
  }
}

async function sweepAbandonedUploads({ tmpDir }: LocalLayout, olderThan: Date): Promise<number> {
  let names: string[];
  try {
    names = await readdir(tmpDir);
  } catch (error) {
    if (errno(error) === 'ENOENT') return 0;
    throw toStorageError(error, '.tmp');
  }
  let removed = 0;
  for (const name of names) {
    const path = join(tmpDir, name);
    // mtime: a put writes its temp file continuously, so only a dead one stays unmodified for long.
    const stats = await stat(path).catch(ignoreError('a temp file renamed or removed meanwhile is skipped'));
    if (!stats?.isFile() || stats.mtime >= olderThan) continue;
    await rm(path, { force: true });
    removed++;
  }
  return removed;
}

async function check({ root, objectsDir, tmpDir }: LocalLayout): Promise<void> {
  try {
    const stats = await stat(root);
    if (!stats.isDirectory()) throw new Error(`${root} is not a directory`);
    await mkdir(objectsDir, { recursive: true });
    await mkdir(tmpDir, { recursive: true });
    // A real write, not access(2): catches read-only mounts, full disks and ownership problems alike.
    const probe = join(tmpDir, `.check-${randomUUID()}`);
    const handle = await open(probe, 'wx');
    try {
      await handle.write('ok');
      await handle.sync();
    } finally {
      await handle.close();
      await rm(probe, { force: true });
    }
  } catch (error) {
    throw new StorageUnavailableError(`local storage at ${root} is not usable: ${(error as Error).message}`, { cause: error });
  }
}

export function createLocalStore(options: LocalStoreOptions): ObjectStore {
  const layout = localLayout(options.root);
  return {
    driver: 'local',
    put: (key, body, putOptions = {}) => putObject(layout, key, body, putOptions),
    get: (key, range) => getObject(layout, key, range),
    stat: async (key) => statFile(key, pathOf(layout, key)),
    delete: (key) => remove(layout, key),
    deletePrefix: (prefix) => deletePrefix(layout, prefix),
    list: (prefix) => list(layout, prefix),
    async presignedGetUrl(key: string): Promise<string | undefined> {
      validateKey(key);
      return undefined; // files are served by the service itself
    },
    async presignedPutUrl(key: string): Promise<string | undefined> {
      validateKey(key);
      return undefined; // uploads go through the service itself
    },
    sweepAbandonedUploads: (olderThan) => sweepAbandonedUploads(layout, olderThan),
    check: () => check(layout),
  };
}
