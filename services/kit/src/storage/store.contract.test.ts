// One contract, both drivers: what a service may rely on whichever storage the operator configured.
// s3 runs on each of the run's real S3 servers, MinIO and SeaweedFS (a fresh bucket per test), local on a fresh
// temporary directory.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestBucket, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import {
  BodyLengthMismatchError,
  ChecksumMismatchError,
  createLocalStore,
  createObjectStore,
  createS3Store,
  InvalidKeyError,
  KeyConflictError,
  ObjectNotFoundError,
  ObjectTooLargeError,
  RangeNotSatisfiableError,
  StorageError,
  StorageUnavailableError,
  type ObjectStore,
} from './index.ts';

const MiB = 1024 * 1024;
const partSize = 5 * MiB; // the s3 driver's smallest part, so multi-MiB bodies take the multipart path

interface Subject {
  store: ObjectStore;
  /** Traces an aborted upload could leave: temp files (local), incomplete multipart uploads (s3). */
  leftovers(): Promise<string[]>;
  /** A store on the same backend that can't work (missing bucket / directory). */
  broken(): ObjectStore;
  cleanup(): Promise<void>;
}

const drivers: { driver: 'local' | 's3'; on: string; create(): Promise<Subject> }[] = [
  {
    driver: 'local',
    on: 'a directory',
    async create() {
      const root = await mkdtemp(join(tmpdir(), 'boxyard-store-'));
      return {
        store: createLocalStore({ root }),
        leftovers: async () => (await readdir(join(root, '.tmp')).catch(() => [])).filter((name) => !name.startsWith('.check-')),
        broken: () => createLocalStore({ root: join(root, 'missing') }),
        cleanup: () => rm(root, { recursive: true, force: true }),
      };
    },
  },
  ...s3Servers.map(({ server }) => ({
    driver: 's3' as const,
    on: server,
    async create(): Promise<Subject> {
      const bucket = await createTestBucket('store', s3Server(server));
      const options = { ...bucket, prefix: 'svc', partSize };
      return {
        store: createS3Store(options),
        leftovers: async () => {
          // MinIO lists incomplete uploads only for '' or an exact key, not for a partial prefix.
          const uploads: string[] = [];
          for await (const upload of bucket.client.listIncompleteUploads(bucket.bucket, '', true)) uploads.push(upload.key);
          return uploads;
        },
        broken: () => createS3Store({ ...options, bucket: `${bucket.bucket}-missing` }),
        cleanup: async () => {},
      };
    },
  })),
];

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/** A body of unknown length, as an upload from a client would arrive: 1 MiB at a time (or `chunk`). */
async function* chunks(data: Buffer, chunk = MiB): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < data.length; offset += chunk) yield data.subarray(offset, offset + chunk);
}

/** A body whose source fails after `after` bytes, like a client that disconnects mid-upload. */
async function* cutOff(data: Buffer, after: number): AsyncGenerator<Buffer> {
  for await (const chunk of chunks(data.subarray(0, after))) yield chunk;
  throw Object.assign(new Error('client disconnected'), { code: 'ECONNRESET' });
}

async function keysOf(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const info of store.list(prefix)) keys.push(info.key);
  return keys;
}

describe.each(drivers)('object store contract: $driver on $on', ({ driver, create }) => {
  let subject: Subject;
  let store: ObjectStore;

  beforeEach(async () => {
    subject = await create();
    store = subject.store;
  });
  afterEach(async () => {
    await subject.cleanup();
  });

  async function expectNothingStored(key: string): Promise<void> {
    expect(await store.stat(key)).toBeUndefined();
    expect(await keysOf(store, '')).toEqual([]);
    expect(await subject.leftovers()).toEqual([]);
  }

  it('reports its driver and is ready', async () => {
    expect(store.driver).toBe(driver);
    await expect(store.check()).resolves.toBeUndefined();
  });

  it('round-trips a multi-MiB random body with its size and sha256', async () => {
    const data = randomBytes(12 * MiB + 123);
    const result = await store.put('boxes/ubuntu/1.0/virtualbox.box', Readable.from(chunks(data)));
    expect(result).toEqual({ key: 'boxes/ubuntu/1.0/virtualbox.box', size: data.length, sha256: sha256(data) });

    const read = await readAll(await store.get('boxes/ubuntu/1.0/virtualbox.box'));
    expect(read.length).toBe(data.length);
    expect(sha256(read)).toBe(sha256(data));

    const info = await store.stat('boxes/ubuntu/1.0/virtualbox.box');
    expect(info).toMatchObject({ key: 'boxes/ubuntu/1.0/virtualbox.box', size: data.length });
    expect(info?.etag).toMatch(/\S/);
    expect(info?.lastModified).toBeInstanceOf(Date);
    expect(await subject.leftovers()).toEqual([]);
  });

  it('stores bodies of unknown length from a generator, odd chunk sizes and empty ones included', async () => {
    const data = randomBytes(6 * MiB + 7);
    const result = await store.put('gen', chunks(data, 99_991));
    expect(result.size).toBe(data.length);
    expect(result.sha256).toBe(sha256(data));
    expect((await readAll(await store.get('gen'))).equals(data)).toBe(true);

    const small = await store.put('small', chunks(Buffer.from('hello')), { contentType: 'text/plain' });
    expect(small).toEqual({ key: 'small', size: 5, sha256: sha256(Buffer.from('hello')) });
    expect((await readAll(await store.get('small'))).toString()).toBe('hello');

    const empty = await store.put('empty', chunks(Buffer.alloc(0)));
    expect(empty).toEqual({ key: 'empty', size: 0, sha256: sha256(Buffer.alloc(0)) });
    expect((await readAll(await store.get('empty'))).length).toBe(0);
    expect((await readAll(await store.get('empty', { start: 0 }))).length).toBe(0);
    expect((await store.stat('empty'))?.size).toBe(0);
  });

  it('stores a body of many parts byte for byte (s3: parts in flight while the next fills)', async () => {
    // 8 parts and a bit, in chunks that straddle every part boundary differently.
    const data = randomBytes(8 * partSize + 12_345);
    const result = await store.put('many-parts', chunks(data, 100_003));
    expect(result).toEqual({ key: 'many-parts', size: data.length, sha256: sha256(data) });
    expect((await readAll(await store.get('many-parts'))).equals(data)).toBe(true);
    expect(await subject.leftovers()).toEqual([]);
  });

  it('stores a body of announced length (a Content-Length; s3: each part streamed as it arrives) and refuses another length', async () => {
    const data = randomBytes(8 * partSize + 12_345);
    expect(await store.put('sized', chunks(data, 100_003), { size: data.length })).toEqual({ key: 'sized', size: data.length, sha256: sha256(data) });
    expect((await readAll(await store.get('sized'))).equals(data)).toBe(true);
    const exactParts = data.subarray(0, 2 * partSize); // ends on a part boundary
    expect((await store.put('parts', chunks(exactParts, 3 * MiB), { size: exactParts.length })).sha256).toBe(sha256(exactParts));
    expect((await readAll(await store.get('parts'))).equals(exactParts)).toBe(true);
    const small = Buffer.from('hello');
    expect(await store.put('small', chunks(small), { size: 5 })).toEqual({ key: 'small', size: 5, sha256: sha256(small) });
    expect(await subject.leftovers()).toEqual([]);

    const refusedWith = async (body: AsyncIterable<Buffer>, options: Parameters<ObjectStore['put']>[2], expected: unknown) => {
      await expect(store.put('refused', body, options)).rejects.toEqual(expected);
      expect(await store.stat('refused')).toBeUndefined();
      expect(await subject.leftovers()).toEqual([]);
    };
    // Shorter (the body ended mid-part) and longer (past the last part) than announced; a small one too.
    const short = new BodyLengthMismatchError(data.length + 1, String(data.length));
    await refusedWith(chunks(data, 100_003), { size: data.length + 1 }, short);
    await refusedWith(chunks(data, 100_003), { size: 6 * partSize }, new BodyLengthMismatchError(6 * partSize, `more than ${6 * partSize}`));
    await refusedWith(chunks(small), { size: 4 }, new BodyLengthMismatchError(4, 'more than 4'));
    await expect(store.put('refused', chunks(data), { size: data.length + 1 })).rejects.toMatchObject({
      statusCode: 400,
      code: 'BODY_LENGTH_MISMATCH',
      announced: data.length + 1,
    });
    // Announced over the limit: refused at the first chunk, not after reading up to it.
    let pulled = 0;
    async function* counted(): AsyncGenerator<Buffer> {
      for await (const chunk of chunks(data)) {
        pulled += chunk.length;
        yield chunk;
      }
    }
    await refusedWith(counted(), { size: data.length, maxBytes: data.length - 1 }, new ObjectTooLargeError(data.length - 1));
    expect(pulled).toBeLessThanOrEqual(2 * MiB);
    // A client that disconnects mid-part, and a wrong sha256: the same as for a body of unknown length.
    await refusedWith(cutOff(data, 3 * partSize + 7), { size: data.length }, expect.objectContaining({ message: 'client disconnected', code: 'ECONNRESET' }));
    await refusedWith(chunks(data), { size: data.length, expectedSha256: sha256(small) }, new ChecksumMismatchError(sha256(small), sha256(data)));
  });

  it('reads exactly the requested byte ranges', async () => {
    const data = randomBytes(11 * MiB + 5);
    await store.put('ranged', chunks(data));
    const range = async (start: number, end?: number) => readAll(await store.get('ranged', end === undefined ? { start } : { start, end }));
    const last = data.length - 1;

    expect((await range(0, 0)).equals(data.subarray(0, 1))).toBe(true);
    expect((await range(1000, 1999)).equals(data.subarray(1000, 2000))).toBe(true);
    expect((await range(partSize - 3, partSize + 3)).equals(data.subarray(partSize - 3, partSize + 4))).toBe(true); // across a part boundary
    expect((await range(last, last)).equals(data.subarray(last))).toBe(true);
    expect((await range(data.length - 10)).equals(data.subarray(data.length - 10))).toBe(true); // open-ended
    expect((await range(0)).equals(data)).toBe(true);
    expect((await range(last - 4, last + 100)).equals(data.subarray(last - 4))).toBe(true); // end clamped

    const beyond = store.get('ranged', { start: data.length });
    await expect(beyond).rejects.toBeInstanceOf(RangeNotSatisfiableError);
    await expect(beyond).rejects.toMatchObject({ statusCode: 416, code: 'RANGE_NOT_SATISFIABLE', size: data.length });
    await expect(store.get('ranged', { start: 10, end: 5 })).rejects.toBeInstanceOf(RangeError);
  });

  it('reports missing objects: stat undefined, get ObjectNotFoundError', async () => {
    expect(await store.stat('missing/key')).toBeUndefined();
    await expect(store.get('missing/key')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(store.get('missing/key', { start: 5 })).rejects.toMatchObject({ statusCode: 404, code: 'OBJECT_NOT_FOUND' });
  });

  it('refuses a body over maxBytes as soon as it passes the limit, storing nothing', async () => {
    let pulled = 0;
    async function* endless(): AsyncGenerator<Buffer> {
      for (;;) {
        pulled += MiB;
        yield randomBytes(MiB);
      }
    }
    const put = store.put('too/big', endless(), { maxBytes: 3 * MiB + 1 });
    await expect(put).rejects.toBeInstanceOf(ObjectTooLargeError);
    await expect(put).rejects.toMatchObject({ statusCode: 413, code: 'OBJECT_TOO_LARGE', limit: 3 * MiB + 1 });
    expect(pulled).toBeLessThanOrEqual(6 * MiB); // it stopped reading, it didn't drain the source
    await expectNothingStored('too/big');

    // Past a part: the multipart upload has started and must be aborted.
    const data = randomBytes(12 * MiB);
    await expect(store.put('too/big', chunks(data), { maxBytes: 11 * MiB })).rejects.toBeInstanceOf(ObjectTooLargeError);
    await expectNothingStored('too/big');

    // Exactly at the limit is fine.
    const exact = await store.put('exact', chunks(data), { maxBytes: data.length });
    expect(exact.size).toBe(data.length);
  });

  it('leaves nothing behind when the upload is cut off half way', async () => {
    const data = randomBytes(12 * MiB);
    for (const after of [MiB / 2, 7 * MiB]) {
      const put = store.put('cut', cutOff(data, after));
      // The source's own error comes back unchanged: a client disconnect is no storage failure.
      await expect(put).rejects.toMatchObject({ message: 'client disconnected', code: 'ECONNRESET' });
      await expect(put).rejects.not.toBeInstanceOf(StorageError);
      await expectNothingStored('cut');
    }
    // Through a Readable (what an HTTP request body is) as well.
    await expect(store.put('cut', Readable.from(cutOff(data, 8 * MiB)))).rejects.toThrow('client disconnected');
    await expectNothingStored('cut');
  });

  it('keeps the previous object when an overwrite is cut off or refused', async () => {
    const old = randomBytes(2 * MiB);
    await store.put('kept', chunks(old));
    await expect(store.put('kept', cutOff(randomBytes(12 * MiB), 9 * MiB))).rejects.toThrow('client disconnected');
    await expect(store.put('kept', chunks(randomBytes(8 * MiB)), { maxBytes: 6 * MiB })).rejects.toBeInstanceOf(ObjectTooLargeError);
    expect((await readAll(await store.get('kept'))).equals(old)).toBe(true);
    expect(await subject.leftovers()).toEqual([]);
  });

  it('refuses a body whose sha256 is not the announced one, storing nothing', async () => {
    for (const size of [1000, 12 * MiB]) {
      const data = randomBytes(size);
      const wrong = sha256(Buffer.from('something else'));
      const put = store.put('checked', chunks(data), { expectedSha256: wrong });
      await expect(put).rejects.toBeInstanceOf(ChecksumMismatchError);
      await expect(put).rejects.toMatchObject({ statusCode: 422, expected: wrong, actual: sha256(data) });
      await expectNothingStored('checked');
    }
    const data = randomBytes(7 * MiB);
    const ok = await store.put('checked', chunks(data), { expectedSha256: sha256(data).toUpperCase() });
    expect(ok.sha256).toBe(sha256(data));
  });

  it('replaces an object atomically on overwrite', async () => {
    const before = randomBytes(9 * MiB);
    const after = randomBytes(6 * MiB + 1);
    await store.put('replaced', chunks(before));
    const oldEtag = (await store.stat('replaced'))?.etag;
    const reader = await store.get('replaced'); // opened before the overwrite
    // S3 promises nothing for a GET in progress, and MinIO makes the overwrite's commit wait (up to ~30 s)
    // for readers still holding the object: only the local driver is held to the old-reader guarantee.
    if (driver === 's3') reader.destroy();

    await store.put('replaced', chunks(after));

    if (driver === 'local') {
      // The open file is the old inode: the reader still gets every old byte.
      expect((await readAll(reader)).equals(before)).toBe(true);
    }
    expect((await readAll(await store.get('replaced'))).equals(after)).toBe(true);
    const info = await store.stat('replaced');
    expect(info?.size).toBe(after.length);
    expect(info?.etag).not.toBe(oldEtag);
    expect(await keysOf(store, '')).toEqual(['replaced']);
  });

  it('ends concurrent puts of one key with one whole body', async () => {
    const a = randomBytes(11 * MiB);
    const b = randomBytes(11 * MiB);
    await Promise.all([store.put('raced', chunks(a)), store.put('raced', chunks(b))]);
    const read = await readAll(await store.get('raced'));
    expect(read.equals(a) || read.equals(b)).toBe(true);
    expect(await subject.leftovers()).toEqual([]);
  });

  it('lists by prefix in key byte order, recursively', async () => {
    const keys = ['p/a', 'p/b/c', 'p/b/d/e', 'p-x', 'pa', 'q/z', 'p/b-1'];
    for (const [i, key] of keys.entries()) await store.put(key, chunks(Buffer.alloc(i + 1, 1)));

    expect(await keysOf(store, 'p/')).toEqual(['p/a', 'p/b-1', 'p/b/c', 'p/b/d/e']);
    expect(await keysOf(store, 'p')).toEqual(['p-x', 'p/a', 'p/b-1', 'p/b/c', 'p/b/d/e', 'pa']);
    expect(await keysOf(store, 'p/b')).toEqual(['p/b-1', 'p/b/c', 'p/b/d/e']);
    expect(await keysOf(store, 'p/b/')).toEqual(['p/b/c', 'p/b/d/e']);
    expect(await keysOf(store, '')).toEqual(['p-x', 'p/a', 'p/b-1', 'p/b/c', 'p/b/d/e', 'pa', 'q/z']);
    expect(await keysOf(store, 'nothing/')).toEqual([]);
    expect(await keysOf(store, 'p/a')).toEqual(['p/a']);

    const infos = [];
    for await (const info of store.list('q/')) infos.push(info);
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatchObject({ key: 'q/z', size: 6 });
    expect(infos[0]?.lastModified).toBeInstanceOf(Date);
  });

  it('deletes single keys; a missing key is not an error', async () => {
    await store.put('d/one', chunks(Buffer.from('1')));
    await store.put('d/two', chunks(Buffer.from('2')));
    await store.delete('d/one');
    await store.delete('d/one');
    await store.delete('never/existed');
    expect(await store.stat('d/one')).toBeUndefined();
    await expect(store.get('d/one')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await keysOf(store, '')).toEqual(['d/two']);

    // Deleting the last key under a "directory" frees the name for an object.
    await store.delete('d/two');
    await store.put('d', chunks(Buffer.from('now a file')));
    expect((await readAll(await store.get('d'))).toString()).toBe('now a file');
  });

  it('deletes by prefix and counts what it deleted', async () => {
    const many = Array.from({ length: 1005 }, (_, i) => `bulk/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < many.length; i += 50) {
      await Promise.all(many.slice(i, i + 50).map((key) => store.put(key, chunks(Buffer.from(key)))));
    }
    await store.put('bulky', chunks(Buffer.from('kept: not under bulk/')));
    await store.put('other/x', chunks(Buffer.from('kept')));

    expect(await store.deletePrefix('bulk/')).toBe(1005);
    expect(await keysOf(store, '')).toEqual(['bulky', 'other/x']);
    expect(await store.deletePrefix('bulk/')).toBe(0);
    await expect(store.deletePrefix('')).rejects.toBeInstanceOf(InvalidKeyError);
  });

  it('refuses keys that are not plain relative names, before reading the body', async () => {
    const invalid = ['', '../x', 'a/../b', '..', '.', 'a//b', 'a/./b', '/abs', 'a/', 'a\\b', 'a\0b', 'line\nbreak', `${'x'.repeat(256)}/y`];
    for (const key of invalid) {
      let pulled = false;
      const body = (async function* () {
        pulled = true;
        yield Buffer.from('x');
      })();
      await expect(store.put(key, body), JSON.stringify(key)).rejects.toBeInstanceOf(InvalidKeyError);
      expect(pulled).toBe(false);
      await expect(store.get(key)).rejects.toMatchObject({ statusCode: 400, code: 'INVALID_KEY' });
      await expect(store.stat(key)).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(store.presignedGetUrl(key, 60)).rejects.toBeInstanceOf(InvalidKeyError);
    }
    expect(() => store.list('../')).toThrow(InvalidKeyError);
    await expect(store.deletePrefix('a//')).rejects.toBeInstanceOf(InvalidKeyError);
    expect(await keysOf(store, '')).toEqual([]);
  });

  it('keeps unusual but valid keys exactly as given', async () => {
    const keys = ['.hidden/x', 'sp ace/ünï cödé+%20&?#=.txt', 'a..b/..c', 'UPPER/lower'];
    for (const key of keys) await store.put(key, chunks(Buffer.from(key)));
    for (const key of keys) expect((await readAll(await store.get(key))).toString()).toBe(key);
    expect(await keysOf(store, '')).toEqual([...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
  });

  it('refuses a key whose parent or child is already an object', async () => {
    await store.put('a', chunks(Buffer.from('file')));
    await expect(store.put('a/b', chunks(Buffer.from('child')))).rejects.toBeInstanceOf(KeyConflictError);
    await store.put('c/d', chunks(Buffer.from('child')));
    await expect(store.put('c', chunks(Buffer.from('parent')))).rejects.toMatchObject({ statusCode: 409, code: 'KEY_CONFLICT' });
    expect(await keysOf(store, '')).toEqual(['a', 'c/d']);
    expect(await subject.leftovers()).toEqual([]);
  });

  it('gives a presigned URL on s3 that plain fetch can read, and none on local', async () => {
    const data = randomBytes(64 * 1024);
    await store.put('shared/file.bin', chunks(data));
    const url = await store.presignedGetUrl('shared/file.bin', 300);
    if (driver === 'local') {
      expect(url).toBeUndefined();
      return;
    }
    expect(url).toMatch(/^http/);
    const response = await fetch(url!);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(data)).toBe(true);
  });

  it('gives a presigned PUT URL on s3 that plain fetch can write the object through, and none on local', async () => {
    const data = randomBytes(64 * 1024);
    const url = await store.presignedPutUrl('shared/put.bin', 300);
    if (driver === 'local') {
      expect(url).toBeUndefined();
      return;
    }
    const response = await fetch(url!, { method: 'PUT', body: data });
    expect(response.status).toBe(200);
    expect(await store.stat('shared/put.bin')).toMatchObject({ size: data.length });
  });

  it('fails its readiness check when the bucket or directory is missing', async () => {
    await expect(subject.broken().check()).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(subject.broken().check()).rejects.toMatchObject({ statusCode: 503, code: 'STORAGE_UNAVAILABLE' });
  });
});

describe.each(s3Servers)('s3 driver specifics on $server', ({ server }) => {
  it('keeps each service inside its prefix and remembers the content type', async () => {
    const bucket = await createTestBucket('prefix', s3Server(server));
    const boxes = createObjectStore({
      driver: 's3',
      endpoint: bucket.endpoint,
      access_key: bucket.accessKey,
      secret_key: bucket.secretKey,
      bucket: bucket.bucket,
      region: bucket.region,
      prefix: 'box-repository/',
    });
    const files = createS3Store({ ...bucket, prefix: 'file-share' });
    await boxes.put('x/y', chunks(Buffer.from('box')), { contentType: 'application/x-tar' });
    await files.put('x/y', chunks(Buffer.from('file')));

    const raw: string[] = [];
    for await (const item of bucket.client.listObjects(bucket.bucket, '', true)) raw.push((item as { name: string }).name);
    expect(raw).toEqual(['box-repository/x/y', 'file-share/x/y']);
    expect(await keysOf(boxes, '')).toEqual(['x/y']);
    expect((await readAll(await files.get('x/y'))).toString()).toBe('file');
    expect((await boxes.stat('x/y'))?.contentType).toBe('application/x-tar');
    expect(await boxes.deletePrefix('x/')).toBe(1);
    expect(await files.stat('x/y')).toBeDefined();
  });
  it('removes, with a key, the parts of an upload to it that was never completed nor aborted', async () => {
    // What an upload leaves when the storage dies under it: its abort failed too. No object listing shows it.
    const bucket = await createTestBucket('unfinished', s3Server(server));
    const store = createS3Store({ ...bucket, prefix: 'svc' });
    const uploadId = await bucket.client.initiateNewMultipartUpload(bucket.bucket, 'svc/files/k', {});
    await bucket.client.uploadPart({ bucketName: bucket.bucket, objectName: 'svc/files/k', uploadID: uploadId, partNumber: 1, headers: {} }, Buffer.alloc(MiB));
    const unfinished = async () => (await bucket.client.listIncompleteUploadsQuery(bucket.bucket, 'svc/files/k', '', '', '')).uploads.map((u) => u.key);
    expect(await unfinished()).toEqual(['svc/files/k']);
    await store.delete('files/k');
    expect(await unfinished()).toEqual([]);
  });
  it('reports an unreachable endpoint as unavailable (503), not as a missing object', async () => {
    const bucket = await createTestBucket('down', s3Server(server));
    const down = createS3Store({ ...bucket, endpoint: 'http://127.0.0.1:1' });
    await expect(down.check()).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(down.stat('k')).rejects.toMatchObject({ statusCode: 503, code: 'STORAGE_UNAVAILABLE' });
    await expect(down.get('k')).rejects.toMatchObject({ statusCode: 503, code: 'STORAGE_UNAVAILABLE' });
    await expect(down.get('k', { start: 1, end: 2 })).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(down.put('k', chunks(Buffer.from('v')))).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});

describe('local driver specifics', () => {
  it('is not ready when its root is a file, and selects from snake_case config', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'boxyard-store-'));
    try {
      await writeFile(join(dir, 'file'), 'x');
      await expect(createObjectStore({ driver: 'local', root: join(dir, 'file') }).check()).rejects.toBeInstanceOf(StorageUnavailableError);
      const store = createObjectStore({ driver: 'local', root: dir });
      expect(store.driver).toBe('local');
      await store.put('k', chunks(Buffer.from('v')));
      expect(await readdir(join(dir, 'objects'))).toEqual(['k']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
