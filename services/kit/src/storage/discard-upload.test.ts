// The bytes of an upload that did not commit go only once the database confirms that no row refers to them, so an
// unknown commit outcome (the database died during COMMIT) can never leave a row pointing at missing bytes.
// Real PostgreSQL and a real local store; the database "goes away" behind a TCP hop the test cuts.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { startTcpProxy, type TcpProxy } from '@boxyard/test/harness/tcp-proxy.ts';
import { createUploadDiscarder } from './discard-upload.ts';
import { createLocalStore } from './local.ts';
import { createS3Store } from './s3.ts';

describe('discarding an uncommitted upload', () => {
  let root: string;
  let pool: DatabasePool;
  let hop: TcpProxy;
  let throughHop: DatabasePool;
  const store = () => createLocalStore({ root });
  const warnings: unknown[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'discard-'));
    await chmod(root, 0o755);
    const url = await createTestDatabase('discard');
    pool = await createDatabasePool({ url });
    const target = new URL(url);
    hop = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    throughHop = await createDatabasePool({ url: hop.through(url) });
    await throughHop.query(sql.unsafe`create table files (storage_key text primary key)`);
    await throughHop.query(sql.unsafe`create table cleanup (storage_key text primary key)`);
  });
  afterAll(async () => {
    await Promise.all([pool?.end(), throughHop?.end(), hop?.close()]);
    await rm(root, { recursive: true, force: true });
  });

  async function upload(key: string, committed: boolean) {
    await store().put(key, Readable.from([Buffer.from(key)]));
    await pool.query(sql.unsafe`insert into cleanup values (${key})`);
    if (committed) await pool.query(sql.unsafe`insert into files values (${key})`);
  }
  const discarder = () =>
    createUploadDiscarder({
      store: store(),
      isReferenced: (key) => throughHop.exists(sql.unsafe`select 1 from files where storage_key = ${key}`),
      dropRegistration: async (key) => void (await throughHop.query(sql.unsafe`delete from cleanup where storage_key = ${key}`)),
      log: { warn: (o) => warnings.push(o) },
      retryMs: 50,
    });
  const registered = (key: string) => pool.exists(sql.unsafe`select 1 from cleanup where storage_key = ${key}`);

  it('deletes the object and its registration when no row refers to it', async () => {
    await upload('a/lost', false);
    await discarder().discard('a/lost');
    expect(await store().stat('a/lost')).toBeUndefined();
    expect(await registered('a/lost')).toBe(false);
  });

  it('keeps the object when the commit went through after all', async () => {
    await upload('a/committed', true);
    await discarder().discard('a/committed');
    expect(await store().stat('a/committed')).toBeDefined();
  });

  it('waits for the database while it is away, then decides', async () => {
    await upload('b/lost', false);
    await upload('b/committed', true);
    await hop.close();
    const waiting = discarder();
    await waiting.discard('b/lost');
    await waiting.discard('b/committed');
    expect(waiting.pending()).toBe(2);
    expect(await store().stat('b/lost')).toBeDefined(); // unknown outcome: nothing deleted yet
    await hop.open();
    await expect.poll(() => waiting.pending()).toBe(0);
    expect(await store().stat('b/lost')).toBeUndefined();
    expect(await registered('b/lost')).toBe(false);
    expect(await store().stat('b/committed')).toBeDefined();
    waiting.stop();
    expect(warnings).toEqual([]);
  });

  it("waits for the storage while it is not usable, then deletes the object and its upload's leftover parts", async () => {
    // Storage that answers but is not usable yet (its bucket missing, as while MinIO initialises: no socket error
    // to recognise); once usable, the upload's parts (its abort failed when the storage went away) go too.
    const bucket = await createTestBucket('discard');
    const later = `${bucket.bucket}-later`;
    const s3 = createS3Store({ ...bucket, bucket: later, prefix: 'svc' });
    await pool.query(sql.unsafe`insert into cleanup values ('c/lost')`);
    // Retries wait until the storage is usable and holds the parts, so none runs in between.
    let usable!: () => void;
    const becameUsable = new Promise<void>((resolve) => (usable = resolve));
    let attempts = 0;
    const waiting = createUploadDiscarder({
      store: s3,
      isReferenced: async (key) => {
        if (attempts++ > 0) await becameUsable;
        return pool.exists(sql.unsafe`select 1 from files where storage_key = ${key}`);
      },
      dropRegistration: async (key) => void (await pool.query(sql.unsafe`delete from cleanup where storage_key = ${key}`)),
      log: { warn: (o) => warnings.push(o) },
      retryMs: 50,
    });
    await waiting.discard('c/lost');
    expect(waiting.pending()).toBe(1);
    await bucket.client.makeBucket(later, bucket.region);
    const uploadId = await bucket.client.initiateNewMultipartUpload(later, 'svc/c/lost', {});
    await bucket.client.uploadPart({ bucketName: later, objectName: 'svc/c/lost', uploadID: uploadId, partNumber: 1, headers: {} }, Buffer.alloc(1024));
    usable();
    await expect.poll(() => waiting.pending(), { timeout: 10_000 }).toBe(0);
    expect((await bucket.client.listIncompleteUploadsQuery(later, 'svc/c/lost', '', '', '')).uploads).toEqual([]);
    expect(await registered('c/lost')).toBe(false);
    waiting.stop();
    expect(warnings).toEqual([]);
  });
});
