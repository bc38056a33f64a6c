// The local driver's put spares calls on the way of every upload: no mkdir of folders that exist (made only when
// the rename or the open says they are missing), and one fsync of a folder for the renames that arrive while
// another is in flight. Both must keep what they replace: a folder removed between two uploads is made again, and
// no put returns before a sync of its folder that began after its rename.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createLocalStore } from './index.ts';
import { createDirectorySyncs } from './local-put.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'boxyard-local-put-'));
});
afterEach(() => rm(root, { recursive: true, force: true }));

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const read = async (store: ReturnType<typeof createLocalStore>, key: string) => Buffer.concat((await (await store.get(key)).toArray()) as Buffer[]);

it('makes the folders again when they were removed between two uploads (objects/ and .tmp/ alike)', async () => {
  const store = createLocalStore({ root });
  const first = randomBytes(10 * 1024);
  expect((await store.put('files/a', Readable.from([first]))).sha256).toBe(sha256(first));
  await rm(join(root, 'objects'), { recursive: true });
  await rm(join(root, '.tmp'), { recursive: true });
  const second = randomBytes(10 * 1024);
  expect((await store.put('files/b', Readable.from([second]))).sha256).toBe(sha256(second));
  expect(await read(store, 'files/b')).toEqual(second);
  // A deeper key than any before, and many at once into a folder that is gone again.
  await rm(join(root, 'objects'), { recursive: true });
  const many = Array.from({ length: 20 }, (_, i) => ({ key: `deep/er/k-${i}`, body: randomBytes(100 + i) }));
  await Promise.all(many.map(({ key, body }) => store.put(key, Readable.from([body]))));
  for (const { key, body } of many) expect(await read(store, key)).toEqual(body);
  expect(await readdir(join(root, '.tmp'))).toEqual([]);
});

/** A sync that ends when told to: what started when, and a way to end each (a power cut cannot run here). */
function controlledSyncs() {
  const started: { path: string; at: number; end(error?: Error): void }[] = [];
  let clock = 0;
  const sync = (path: string) =>
    new Promise<void>((resolve, reject) => {
      started.push({ path, at: ++clock, end: (error) => (error ? reject(error) : resolve()) });
    });
  return { started, sync, tick: () => ++clock };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

it('(simulated fsync) shares a folder sync between the renames that arrive while one runs, never one that began before a rename', async () => {
  const { started, sync, tick } = controlledSyncs();
  const syncDirectory = createDirectorySyncs(sync);
  const done: string[] = [];
  const call = (name: string, path = '/objects/files') => {
    const calledAt = tick();
    return { calledAt, promise: syncDirectory(path).then(() => void done.push(name)) };
  };
  const a = call('a');
  expect(started).toHaveLength(1);
  // b, c and d come while a's sync runs: that sync may have begun before their renames, so they wait for the next.
  const later = [call('b'), call('c'), call('d')];
  const other = call('other folder', '/objects/else');
  expect(started.map((s) => s.path)).toEqual(['/objects/files', '/objects/else']);
  started[0]!.end();
  await a.promise;
  await settled();
  expect(done).toEqual(['a']);
  expect(started).toHaveLength(3); // one sync for b, c and d together
  const shared = started[2]!;
  for (const waiting of later) expect(shared.at).toBeGreaterThan(waiting.calledAt);
  const e = call('e'); // arrives while the shared one runs: the next again
  shared.end();
  await Promise.all(later.map((l) => l.promise));
  await settled();
  expect(done).toEqual(['a', 'b', 'c', 'd']);
  expect(started[3]!.at).toBeGreaterThan(e.calledAt);
  started[3]!.end();
  started[1]!.end();
  await Promise.all([e.promise, other.promise]);
  expect(started).toHaveLength(4);
});

it('(simulated fsync) fails the callers of a failed sync, and gives the ones waiting behind it a sync of their own', async () => {
  const { started, sync } = controlledSyncs();
  const syncDirectory = createDirectorySyncs(sync);
  const first = syncDirectory('/d');
  const second = syncDirectory('/d');
  started[0]!.end(new Error('EIO'));
  await expect(first).rejects.toThrow('EIO');
  await settled();
  expect(started).toHaveLength(2);
  started[1]!.end();
  await expect(second).resolves.toBeUndefined();
  // Idle again: the next call starts its own sync at once.
  const third = syncDirectory('/d');
  expect(started).toHaveLength(3);
  started[2]!.end();
  await third;
});
