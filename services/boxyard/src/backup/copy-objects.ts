// Copies the objects a snapshot names from a service's storage into the backup. Keys are never rewritten, so an
// object copied in an earlier attempt is still the right bytes and is reused. An object deleted since the
// snapshot (a file replaced or removed meanwhile) is reported as missing: the caller takes a new snapshot.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ObjectNotFoundError, type ObjectStore } from '@boxyard/kit';
import { forEachLimited, writeStreamToFile } from './files.ts';
import type { ObjectRecord } from './manifest.ts';

/** A few objects at a time: enough to hide per-object latency on S3, gentle on a local disk. */
const CONCURRENCY = 4;

/** The backup's file for a key: a hash of it, so no key can name a path (and keys may be longer than a file name). */
export const objectFile = (objectsDir: string, key: string) => join(objectsDir, createHash('sha256').update(key).digest('hex'));

export async function copyObjects(
  store: ObjectStore,
  keys: Iterable<string>,
  backupDir: string,
  objectsDir: string,
  copied: Map<string, ObjectRecord>,
): Promise<{ missing: string[] }> {
  const missing: string[] = [];
  const todo = [...keys].filter((key) => !copied.has(key)).sort();
  await forEachLimited(todo, CONCURRENCY, async (key) => {
    let body;
    try {
      body = await store.get(key);
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return void missing.push(key);
      throw error;
    }
    const file = objectFile(objectsDir, key);
    const digest = await writeStreamToFile(join(backupDir, file), body);
    copied.set(key, { key, file, ...digest });
  });
  return { missing };
}
