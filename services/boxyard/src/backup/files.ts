// File helpers for backups: every file is written whole and synced, hashed on the way, so the manifest records
// exactly what is on disk and a restore can prove it before it writes anything.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ignoreError } from '@boxyard/kit';

export interface FileDigest {
  size: number;
  sha256: string;
}

/** Streams `source` into a new file (never over an existing one), synced before it returns. */
export async function writeStreamToFile(path: string, source: AsyncIterable<Uint8Array> | NodeJS.ReadableStream, mode = 0o600): Promise<FileDigest> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const hash = createHash('sha256');
  let size = 0;
  const handle = await open(path, 'wx', mode);
  try {
    await pipeline(source, async (chunks: AsyncIterable<Uint8Array | string>) => {
      for await (const chunk of chunks) {
        if (typeof chunk === 'string') throw new Error('expected bytes, got text'); // only binary streams come here
        hash.update(chunk);
        size += chunk.length;
        await handle.write(chunk);
      }
    });
    await handle.sync();
  } catch (error) {
    await handle.close().catch(ignoreError('closing after a failure that is the one reported'));
    await rm(path, { force: true });
    throw error;
  }
  await handle.close();
  return { size, sha256: hash.digest('hex') };
}

/** Replaces `path` atomically: a reader sees the old file or the new one, never a part. */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const staging = `${path}.${process.pid}.tmp`;
  const handle = await open(staging, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(staging, path);
  await syncDirectory(dirname(path));
}

export async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function digestFile(path: string): Promise<FileDigest> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest('hex') };
}

/** Whether `path` is missing, or an empty directory; false for anything else (a file, a directory with entries). */
export async function isMissingOrEmptyDirectory(path: string): Promise<boolean> {
  try {
    return (await readdir(path)).length === 0;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return true;
    if (code === 'ENOTDIR') return false;
    throw error;
  }
}

/** Runs `work` over `items`, at most `limit` at a time; the first failure rejects (others finish first). */
export async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const worker = async () => {
    while (next < items.length && failures.length === 0) {
      const item = items[next++]!;
      await work(item).catch((error: unknown) => void failures.push(error));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failures.length > 0) throw failures[0];
}
