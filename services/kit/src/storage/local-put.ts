// The local driver's put: the body goes to a file in .tmp/, written in batches and flushed as it comes, then synced
// and renamed into objects/ (local.ts says why that is atomic).
import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { KeyConflictError } from './errors.ts';
import { HashingCounter } from './hashing-counter.ts';
import { errno, pathOf, toStorageError, type LocalLayout } from './local-layout.ts';
import type { PutBody, PutOptions, PutResult } from './types.ts';
import { ignoreError, markHandled } from '../errors/ignore-error.ts';

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
    markHandled(inFlight); // awaited before the next batch or at the end; never unhandled meanwhile
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
      markHandled(flushing); // a failing flush fails the final sync too; awaited by settled()
    },
    async settled(): Promise<void> {
      await flushing;
    },
  };
}

async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * fsync of a directory for every rename into it, shared: a sync covers every rename made before it started, so
 * the renames that arrive while one is in flight wait for the next one, which starts once it ends, and that one
 * sync serves them all (a group commit, as a database does with its log). Each caller still returns only after a
 * sync that began after its rename; concurrent small uploads into one directory paid a sync each.
 */
export function createDirectorySyncs(sync: (path: string) => Promise<void> = fsyncDirectory): (path: string) => Promise<void> {
  const directories = new Map<string, { running: Promise<void>; next: Promise<void> | undefined }>();
  const start = (path: string): Promise<void> => {
    const running = sync(path).finally(() => {
      const state = directories.get(path);
      if (state?.running === running && !state.next) directories.delete(path);
    });
    directories.set(path, { running, next: directories.get(path)?.next });
    return running;
  };
  return (path) => {
    const state = directories.get(path);
    if (!state) return start(path);
    state.next ??= state.running.catch(ignoreError('the sync this one follows failed its own callers')).then(() => {
      state.next = undefined;
      return start(path);
    });
    return state.next;
  };
}

const syncDirectory = createDirectorySyncs();

/**
 * rename into place; the target's folder is made only when the rename says it is missing (an existing one cost a
 * mkdir on every upload), retried when a concurrent delete prunes the freshly made folder in between.
 */
async function moveIntoPlace(layout: LocalLayout, temp: string, target: string, key: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await rename(temp, target);
      break;
    } catch (error) {
      const code = errno(error);
      if (code === 'ENOENT' && attempt < 5) {
        await mkdir(dirname(target), { recursive: true });
        // A folder just made is an entry of its parent: synced up to the root, so the rename's sync is enough.
        for (let dir = dirname(dirname(target)); dir.startsWith(layout.root); dir = dirname(dir)) {
          await syncDirectory(dir);
          if (dir === layout.root) break;
        }
        continue;
      }
      if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY') throw new KeyConflictError(key, { cause: error });
      throw error;
    }
  }
  await syncDirectory(dirname(target)); // the rename itself must survive a power cut
}

/** A new temporary file in .tmp/, made first when it is missing (removed by hand, or a fresh volume). */
async function openTemp(layout: LocalLayout, temp: string): Promise<FileHandle> {
  try {
    return await open(temp, 'wx');
  } catch (error) {
    if (errno(error) !== 'ENOENT') throw error;
    await mkdir(layout.tmpDir, { recursive: true });
    return open(temp, 'wx');
  }
}

export async function putObject(layout: LocalLayout, key: string, body: PutBody, putOptions: PutOptions): Promise<PutResult> {
  const target = pathOf(layout, key);
  const counter = new HashingCounter(putOptions);
  let handle: FileHandle | undefined;
  const temp = join(layout.tmpDir, randomUUID());
  // Only filesystem calls are mapped: an error from `body` (the client went away) is the caller's, not a 507.
  const disk = <T>(step: Promise<T>): Promise<T> => step.catch((error: unknown) => Promise.reject(toStorageError(error, key)));
  try {
    handle = await disk(openTemp(layout, temp));
    const file = handle;
    const flusher = backgroundFlusher(file);
    await pipeline(body, counter, (chunks: AsyncIterable<Buffer>) =>
      writeBatched(chunks, async (batch) => {
        await disk(writeAll(file, batch));
        flusher.wrote(batch);
      }),
    );
    await disk(flusher.settled());
    await disk(file.sync()); // data on disk before the rename makes it visible
    handle = undefined;
    await disk(file.close());
    await disk(moveIntoPlace(layout, temp, target, key));
  } catch (error) {
    await handle?.close().catch(ignoreError('closing after a failure that is the one reported'));
    await rm(temp, { force: true });
    throw error;
  }
  return { key, size: counter.bytes, sha256: counter.sha256 };
}
