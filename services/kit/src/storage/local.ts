// Object storage on a directory (a PersistentVolume when there is no S3). Layout under `root`:
//   objects/<key>   the objects, one file per key, `/` in keys making directories
//   .tmp/<uuid>     uploads in progress; renamed into objects/ only once complete, synced and verified
// rename(2) within one filesystem is atomic, so a reader sees the old object or the new one, never half of one,
// and a reader that already opened the old file keeps reading it whole. A crash can leave files in .tmp/ (never
// in objects/); sweepAbandonedUploads deletes those no longer written to.
import { randomUUID } from 'node:crypto';
import type { Stats } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { resolveRange } from './byte-range.ts';
import {
  InvalidKeyError,
  KeyConflictError,
  ObjectNotFoundError,
  StorageError,
  StorageFullError,
  StorageUnavailableError,
} from './errors.ts';
import { FileBody } from './file-body.ts';
import { HashingCounter } from './hashing-counter.ts';
import { validateKey, validatePrefix } from './keys.ts';
import type { ByteRange, ObjectInfo, ObjectStore, PutBody, PutOptions, PutResult } from './types.ts';

export interface LocalStoreOptions {
  /** An existing directory (not created here, so a missing volume mount fails loudly instead of filling the container's disk). */
  root: string;
}

const writeBatchBytes = 4 * 1024 * 1024;
const flushEveryBytes = 32 * 1024 * 1024;

/**
 * Writes an upload's chunks (64 KiB network reads) in batches of ~4 MiB, one batch on disk while the next one is
 * read and hashed: the hash (main thread) and the write (thread pool) overlap instead of taking turns per chunk.
 * A batch goes to disk with writev, as the chunks are (copying them into one buffer cost a fifth of the main thread).
 */
async function writeBatched(chunks: AsyncIterable<Buffer>, write: (batch: Buffer[]) => Promise<void>): Promise<void> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let inFlight: Promise<void> = Promise.resolve();
  for await (const chunk of chunks) {
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes < writeBatchBytes) continue;
    await inFlight;
    inFlight = write(pending);
    inFlight.catch(() => {}); // awaited before the next batch or at the end; never unhandled meanwhile
    pending = [];
    pendingBytes = 0;
  }
  await inFlight;
  if (pendingBytes > 0) await write(pending);
}

/** FileHandle.writev may write less than asked (it does not loop): write the rest. */
async function writeAll(file: FileHandle, batch: Buffer[]): Promise<void> {
  let rest = batch;
  while (rest.length > 0) {
    let written = (await file.writev(rest)).bytesWritten;
    while (rest.length > 0 && written >= rest[0]!.length) {
      written -= rest[0]!.length;
      rest = rest.slice(1);
    }
    if (written > 0) rest = [rest[0]!.subarray(written), ...rest.slice(1)];
  }
}

/**
 * Flushes a file being written every `flushEveryBytes` in the background (fdatasync on the thread pool, one at a
 * time), so the disk writes while the rest arrives and the final fsync finds little left to write: without it the
 * whole upload sat in the page cache and its fsync added a write of the entire file after the last byte came in.
 */
function backgroundFlusher(file: FileHandle) {
  let unflushed = 0;
  let flushing: Promise<void> | undefined;
  return {
    wrote(batch: Buffer[]): void {
      for (const chunk of batch) unflushed += chunk.length;
      if (unflushed < flushEveryBytes || flushing) return;
      unflushed = 0;
      flushing = file.datasync().finally(() => (flushing = undefined));
      flushing.catch(() => {}); // a failing flush fails the final sync too; awaited by settled()
    },
    async settled(): Promise<void> {
      await flushing;
    },
  };
}

const errno = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

/** Disk-full and similar errno values as storage errors the HTTP layer understands. */
function toStorageError(error: unknown, key: string): unknown {
  if (error instanceof StorageError) return error;
  switch (errno(error)) {
    case 'ENOSPC':
    case 'EDQUOT':
      return new StorageFullError({ cause: error });
    case 'ENAMETOOLONG':
      return new InvalidKeyError(key, 'too long for the filesystem');
    case 'EROFS':
    case 'EIO':
      return new StorageUnavailableError(`storage directory is not writable: ${(error as Error).message}`, { cause: error });
    default:
      return error;
  }
}

export function createLocalStore(options: LocalStoreOptions): ObjectStore {
  const root = resolve(options.root);
  const objectsDir = join(root, 'objects');
  const tmpDir = join(root, '.tmp');

  /** The file of a key; validation already rules out `..`, the prefix check is a second line of defence. */
  function pathOf(key: string): string {
    validateKey(key);
    const path = resolve(objectsDir, ...key.split('/'));
    if (!path.startsWith(objectsDir + sep)) throw new InvalidKeyError(key, 'resolves outside the storage root');
    return path;
  }

  const dirPathOf = (dirKey: string): string => (dirKey === '' ? objectsDir : join(objectsDir, ...dirKey.split('/')));

  function infoOf(key: string, stats: Stats): ObjectInfo {
    // inode + size + mtime: a replaced object is a new inode (rename), so the validator changes with it.
    const etag = [stats.ino, stats.size, Math.round(stats.mtimeMs * 1000)].map((n) => n.toString(16)).join('-');
    return { key, size: stats.size, lastModified: stats.mtime, etag };
  }

  async function fsyncDirectory(path: string): Promise<void> {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** mkdir -p + rename, retried when a concurrent delete prunes the freshly made parent in between. */
  async function moveIntoPlace(temp: string, target: string, key: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(dirname(target), { recursive: true });
        await rename(temp, target);
        break;
      } catch (error) {
        const code = errno(error);
        if (code === 'ENOENT' && attempt < 5) continue;
        if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY') throw new KeyConflictError(key, { cause: error });
        throw error;
      }
    }
    await fsyncDirectory(dirname(target)); // the rename itself must survive a power cut
  }

  /** Removes the now-empty directories between a deleted file and objects/ (a missing one is fine). */
  async function pruneEmptyParents(path: string): Promise<void> {
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
  async function* walk(dirKey: string, prefix: string): AsyncGenerator<ObjectInfo> {
    let entries;
    try {
      entries = await readdir(dirPathOf(dirKey), { withFileTypes: true });
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
        if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* walk(key, prefix);
      } else if (key.startsWith(prefix)) {
        const info = await statFile(key, dirPathOf(key));
        if (info) yield info; // skipped when deleted since readdir
      }
    }
  }

  async function remove(key: string): Promise<void> {
    const path = pathOf(key);
    try {
      await unlink(path);
    } catch (error) {
      const code = errno(error);
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return; // no such object
      throw toStorageError(error, key);
    }
    await pruneEmptyParents(path);
  }

  function list(prefix: string): AsyncIterable<ObjectInfo> {
    validatePrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    return walk(slash === -1 ? '' : prefix.slice(0, slash), prefix); // start at the prefix's directory
  }

  return {
    driver: 'local',

    async put(key: string, body: PutBody, putOptions: PutOptions = {}): Promise<PutResult> {
      const target = pathOf(key);
      const counter = new HashingCounter(putOptions);
      let handle: FileHandle | undefined;
      const temp = join(tmpDir, randomUUID());
      // Only filesystem calls are mapped: an error from `body` (the client went away) is the caller's, not a 507.
      const disk = <T>(step: Promise<T>): Promise<T> => step.catch((error: unknown) => Promise.reject(toStorageError(error, key)));
      try {
        await disk(mkdir(tmpDir, { recursive: true }));
        handle = await disk(open(temp, 'wx'));
        const file = handle;
        const flusher = backgroundFlusher(file);
        await pipeline(body, counter, (chunks: AsyncIterable<Buffer>) => writeBatched(chunks, async (batch) => {
          await disk(writeAll(file, batch));
          flusher.wrote(batch);
        }));
        await disk(flusher.settled());
        await disk(file.sync()); // data on disk before the rename makes it visible
        handle = undefined;
        await disk(file.close());
        await disk(moveIntoPlace(temp, target, key));
      } catch (error) {
        await handle?.close().catch(() => {});
        await rm(temp, { force: true });
        throw error;
      }
      return { key, size: counter.bytes, sha256: counter.sha256 };
    },

    async get(key: string, range?: ByteRange): Promise<Readable> {
      const path = pathOf(key);
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
    },

    async stat(key: string): Promise<ObjectInfo | undefined> {
      return statFile(key, pathOf(key));
    },

    delete: remove,

    async deletePrefix(prefix: string): Promise<number> {
      if (prefix === '') throw new InvalidKeyError(prefix, 'refusing to delete every object; pass a prefix');
      let count = 0;
      for await (const info of list(prefix)) {
        await remove(info.key);
        count++;
      }
      return count;
    },

    list,

    async presignedGetUrl(key: string): Promise<string | undefined> {
      validateKey(key);
      return undefined; // files are served by the service itself
    },

    async sweepAbandonedUploads(olderThan: Date): Promise<number> {
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
        const stats = await stat(path).catch(() => undefined);
        if (!stats?.isFile() || stats.mtime >= olderThan) continue;
        await rm(path, { force: true });
        removed++;
      }
      return removed;
    },

    async check(): Promise<void> {
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
    },
  };
}
