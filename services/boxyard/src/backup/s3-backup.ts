// `boxyard backup s3://bucket/prefix` and `boxyard restore s3://bucket/prefix`. The backup itself is the
// directory backup (same snapshot, same objects, same manifest), made in a private temporary directory and then
// uploaded file by file with its sha256 checked on the way in, manifest.json last: a prefix holding a manifest
// holds everything it lists. A restore downloads the manifest first (a newer Boxyard's backup is refused before
// anything else is read), then every file, and restores from the copy, which proves every sha256 again.
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ignoreError, ObjectNotFoundError, type ObjectStore } from '@boxyard/kit';
import { backup, type BackupOptions, type BackupSummary } from './backup.ts';
import { BackupError } from './errors.ts';
import { forEachLimited, writeStreamToFile } from './files.ts';
import { MANIFEST_FILE, manifestFiles, parseManifest } from './manifest.ts';
import { restore, type RestoreOptions, type RestoreSummary } from './restore.ts';
import { describeS3, firstKey, s3BackupStore, type S3Location } from './s3-location.ts';

const CONCURRENCY = 4;
/** Written and removed before the backup starts: credentials that cannot write fail in seconds, not at the end. */
const WRITE_CHECK = '.boxyard-write-check';

export interface S3BackupSummary extends BackupSummary {
  location: string;
  /** Bytes and files uploaded, manifest included. */
  bytes: number;
  files: number;
}

export async function backupToS3(location: S3Location, options: BackupOptions = {}): Promise<S3BackupSummary> {
  const where = describeS3(location);
  const store = s3BackupStore(location);
  const existing = await firstKey(store, location);
  if (existing !== undefined)
    throw new BackupError(`${where} is not empty (it holds ${existing}): give a new or empty prefix, a backup never overwrites another`);
  try {
    await store.put(WRITE_CHECK, Readable.from([Buffer.alloc(0)]));
    await store.delete(WRITE_CHECK);
  } catch (error) {
    throw new BackupError(`${where}: the credentials cannot write there: ${(error as Error).message}`);
  }
  const work = await mkdtemp(join(tmpdir(), 'boxyard-s3-backup-'));
  const uploaded: string[] = [];
  try {
    const dir = join(work, 'backup');
    const result = await backup(dir, options);
    options.log?.(`uploading to ${where}`);
    const files = manifestFiles(result.manifest);
    await forEachLimited(files, CONCURRENCY, async (file) => {
      await store.put(file.file, createReadStream(join(dir, file.file)), { expectedSha256: file.sha256, size: file.size });
      uploaded.push(file.file);
    });
    const manifestText = await readFile(join(dir, MANIFEST_FILE));
    await store.put(MANIFEST_FILE, Readable.from([manifestText]), { size: manifestText.length });
    const bytes = files.reduce((n, f) => n + f.size, manifestText.length);
    return { ...result, location: where, bytes, files: files.length + 1 };
  } catch (error) {
    // No manifest was written: what we uploaded is not a backup, and is removed so the prefix can be used again.
    for (const key of uploaded) await store.delete(key).catch(ignoreError('undoing a failed backup; its own error is the one reported'));
    throw error;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export async function restoreFromS3(location: S3Location, options: RestoreOptions = {}): Promise<RestoreSummary> {
  const where = describeS3(location);
  const store = s3BackupStore(location);
  const manifestText = await readText(store, MANIFEST_FILE).catch((error: unknown) => {
    if (error instanceof ObjectNotFoundError) throw new BackupError(`${where} is not a Boxyard backup: it has no ${MANIFEST_FILE}`);
    throw new BackupError(`${where}: cannot read ${MANIFEST_FILE}: ${(error as Error).message}`);
  });
  const manifest = parseManifest(manifestText); // refuses a newer Boxyard's backup before any download
  const work = await mkdtemp(join(tmpdir(), 'boxyard-s3-restore-'));
  try {
    const dir = join(work, 'backup');
    options.log?.(`downloading ${where}`);
    await forEachLimited(manifestFiles(manifest), CONCURRENCY, async (file) => {
      const body = await store.get(file.file).catch((error: unknown) => {
        if (error instanceof ObjectNotFoundError) throw new BackupError(`backup file ${file.file} is missing from ${where}: the backup is incomplete`);
        throw error;
      });
      await writeStreamToFile(join(dir, file.file), body);
    });
    await writeStreamToFile(join(dir, MANIFEST_FILE), Readable.from([Buffer.from(manifestText)]));
    return await restore(dir, options);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A manifest lists every file; 256 MiB is millions of them, and keeps a wrong object from filling memory. */
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

async function readText(store: ObjectStore, key: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of await store.get(key)) {
    size += (chunk as Buffer).length;
    if (size > MAX_MANIFEST_BYTES) throw new BackupError(`${key} is larger than ${MAX_MANIFEST_BYTES} bytes: not a Boxyard backup manifest`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
