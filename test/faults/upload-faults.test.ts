// Faults injected into the real components (issue 12): PostgreSQL, and separately the S3 server (MinIO, and
// SeaweedFS as the second S3 server the storage runs against), is killed (SIGKILL) while
// a 1 GiB box is being uploaded to the box repository and a 1 GiB file to the file share, once a known amount has
// been sent. Then it is started again on the same port and data directory, and we check what a user would:
// each client got 503 with Retry-After (never a 2xx), no row points at missing bytes and, after the services'
// sweeps, no stored object lacks a row and no part of the failed upload is left on the S3 server; the same uploads
// retried succeed and download with the same sha256. (PostgreSQL killed mid-upload under the local storage
// driver is test/single-machine/supervision.test.ts, with `boxyard dev`'s supervisor.)
//
// These tests own their PostgreSQL and S3 server (test/harness/killable.ts): the run's shared servers serve other
// test files in parallel, and killing them would break those.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { adminAuth, startTestShare, type TestShare } from '@boxyard/file-share/testing/test-share.ts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archPath, createBoxPath, createOrganization, startTestService, type BoxPath, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { createTestBucket, createTestDatabase, type TestBucket } from '../harness/fixtures.ts';
import {
  startKillableMinio,
  startKillablePostgres,
  startKillableSeaweedfs,
  type KillableMinio,
  type KillablePostgres,
  type KillableSeaweedfs,
} from '../harness/killable.ts';
import { downloadSha256, generatedBox, generatedBytes, generatedMultipart, streamUpload, type UploadAnswer } from './big-upload.ts';

const GiB = 1 << 30;
/** Bytes sent by each client when the component dies: well into the upload, far from either end. */
const FAULT_AT = 384 << 20;

interface Services {
  boxes: TestService;
  share: TestShare;
}

/** The objects of a service (keys without its prefix), as a listing of the bucket shows them. */
async function storedKeys({ client, bucket }: TestBucket, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const item of client.listObjectsV2(bucket, `${prefix}/`, true)) keys.push((item as { name: string }).name.slice(prefix.length + 1));
  return keys.sort();
}

/**
 * Unfinished multipart uploads on MinIO's disk (one directory each, holding their parts): the parts of an upload
 * that was never completed nor aborted take space that no listing of objects shows (and MinIO lists such uploads
 * only per exact key).
 */
async function unfinishedUploadsOnDisk(minioDir: string): Promise<string[]> {
  const root = join(minioDir, '.minio.sys', 'multipart');
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  const uploads = entries
    .filter((e) => e.isFile())
    .map((e) =>
      join(e.parentPath, e.name)
        .slice(root.length + 1)
        .split('/')
        .slice(0, 2)
        .join('/'),
    );
  return [...new Set(uploads)];
}

async function rowKeys(databaseUrl: string, query: string): Promise<{ storage_key: string; size: string }[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ storage_key: string; size: string }>(query)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Runs each service's sweep the way it runs on a timer, then expects the stored keys to be exactly the rows'
 * keys, each of the row's size. An upload whose commit outcome was unknown is cleaned up once the database
 * answers again (kit storage/discard-upload.ts), so this polls for a while.
 */
async function expectEveryRowHasBytesAndEveryObjectARow({ boxes, share }: Services, unfinishedUploads: () => Promise<string[]>): Promise<void> {
  const checks = [
    {
      service: 'box-repository',
      sweep: () => boxes.running.ctx.cleanup.sweep(),
      rows: () => rowKeys(boxes.databaseUrl, 'select storage_key, size from box_repository.files'),
      stored: () => storedKeys(boxes.bucket!, 'box-repository'),
      stat: (key: string) => boxes.running.ctx.store.stat(key),
    },
    {
      service: 'file-share',
      sweep: () => share.share.sweeper.sweepNow(),
      rows: () => rowKeys(share.databaseUrl, 'select storage_key, size from file_share.entries where storage_key is not null'),
      stored: () => storedKeys(share.bucket!, share.prefix),
      stat: (key: string) => share.share.store.stat(key),
    },
  ];
  for (const check of checks) {
    const rows = await check.rows();
    for (const row of rows) expect((await check.stat(row.storage_key))?.size, `${check.service}: bytes of ${row.storage_key}`).toBe(Number(row.size));
    await expect
      .poll(
        async () => {
          await check.sweep();
          return check.stored();
        },
        { timeout: 20_000, interval: 500, message: `${check.service}: stored objects = keys of rows` },
      )
      .toEqual(rows.map((r) => r.storage_key).sort());
  }
  await expect.poll(unfinishedUploads, { timeout: 20_000, interval: 500, message: 'parts of unfinished uploads on the S3 server' }).toEqual([]);
}

async function waitUntilReady(urls: string[]): Promise<void> {
  for (const url of urls) {
    await expect
      .poll(
        () =>
          fetch(`${url}/health/ready`).then(
            (r) => r.status,
            () => 0,
          ),
        { timeout: 60_000, interval: 250, message: `${url} ready again` },
      )
      .toBe(200);
  }
}

function expectUnavailable(answer: UploadAnswer, service: string, dependency: RegExp): void {
  expect(answer.status, `${service}: ${answer.text}`).toBe(503);
  expect(answer.headers['retry-after'], service).toMatch(/^\d+$/);
  // The service's own error shape, naming the dependency and nothing about where it is.
  const body = JSON.parse(answer.text) as { detail?: string; message?: string };
  expect(body.detail ?? body.message, service).toMatch(dependency);
  expect(answer.text, service).not.toMatch(/127\.0\.0\.1|ECONN|\/tmp\/|\/var\/|at .*\.ts/);
}

/**
 * The S3 servers, each with where it keeps the parts of unfinished uploads: MinIO on its disk (it lists such
 * uploads only per exact key), SeaweedFS in its filer's `.uploads` folder of each bucket.
 */
const s3Servers = [
  { server: 'minio', Server: 'MinIO', start: startKillableMinio, unfinished: (s3: KillableMinio) => unfinishedUploadsOnDisk(s3.dir) },
  {
    server: 'seaweedfs',
    Server: 'SeaweedFS',
    start: startKillableSeaweedfs,
    unfinished: async (s3: KillableMinio, buckets: string[]) => (await Promise.all(buckets.map((b) => (s3 as KillableSeaweedfs).unfinishedUploads(b)))).flat(),
  },
] as const;

/** Repeats an upload answered 503, waiting its Retry-After (at most 10 s a time), for up to two minutes. */
async function retryWhileUnavailable(upload: () => Promise<UploadAnswer | undefined>): Promise<UploadAnswer | undefined> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const answer = await upload();
    if (answer?.status !== 503 || Date.now() > deadline) return answer;
    const seconds = Math.min(10, Math.max(1, Number(answer.headers['retry-after']) || 5));
    await new Promise((r) => setTimeout(r, seconds * 1000));
  }
}

describe.each(s3Servers)('1 GiB uploads when PostgreSQL or $Server dies mid-way', ({ server, Server, start, unfinished }) => {
  let postgres: KillablePostgres;
  let s3: KillableMinio;
  let services: Services;
  const unfinishedUploads = () => unfinished(s3, [services.boxes.bucket!.bucket, services.share.bucket!.bucket]);

  beforeAll(async () => {
    [postgres, s3] = await Promise.all([startKillablePostgres(), start()]);
    const boxes = await startTestService({
      storage: 's3',
      databaseUrl: await createTestDatabase('faultbox', postgres.adminUrl),
      bucket: await createTestBucket('faultbox', s3),
    });
    services = { boxes, share: undefined as unknown as TestShare };
    services.share = await startTestShare({
      storage: 's3',
      databaseUrl: await createTestDatabase('faultfs', postgres.adminUrl),
      bucket: await createTestBucket('faultfs', s3),
      overrides: { uploads: { max_bytes: 2 * GiB }, logging: { level: 'silent' } },
    });
    await createOrganization(boxes, 'faults');
  }, 180_000);

  afterAll(async () => {
    await services?.share?.close();
    await services?.boxes?.close(); // also empties its bucket
    await Promise.allSettled([postgres?.stop(), s3?.stop()]);
  }, 60_000);

  /**
   * Both uploads are in flight when `fault` strikes: each client pauses at FAULT_AT bytes until both are there,
   * the component is killed, and the clients carry on sending until the services answer. It comes back only
   * after both answers, so no commit can succeed behind the fault's back.
   */
  async function uploadThroughFault(name: string, fault: { kill(): Promise<void>; restart(): Promise<void> }, dependency: RegExp) {
    const { boxes, share } = services;
    const path: BoxPath = { org: 'faults', box: 'base', version: '1.0.0', provider: 'virtualbox', arch: name };
    await createBoxPath(boxes, boxes.adminToken, path, { is_public: true });
    const disk = generatedBytes(GiB);
    const box = generatedBox(disk);
    const form = generatedMultipart('file', `${name}.img`, disk);
    const boxUpload = {
      url: `${boxes.url}${archPath(path)}/file/upload`,
      headers: { 'content-type': 'application/octet-stream', 'x-file-name': `${name}.box`, 'x-access-token': boxes.adminToken },
      body: box,
    };
    const fileUpload = { url: `${share.url}/faults/${name}.img`, headers: { 'content-type': form.contentType, authorization: adminAuth }, body: form };

    let arrived = 0;
    let killed: Promise<void> | undefined;
    const killWhenBothArrive = async () => {
      arrived++;
      while (arrived < 2) await new Promise((r) => setTimeout(r, 5));
      await (killed ??= fault.kill());
    };
    const [boxAnswer, fileAnswer] = await Promise.all(
      [boxUpload, fileUpload].map((u) => streamUpload(u.url, { headers: u.headers, body: u.body, fault: { at: FAULT_AT, run: killWhenBothArrive } })),
    );
    await fault.restart();

    expect(killed, 'the fault struck mid-upload').toBeDefined();
    expectUnavailable(boxAnswer!, 'box-repository', dependency);
    expectUnavailable(fileAnswer!, 'file-share', dependency);
    await waitUntilReady([boxes.url, share.url]);
    await expectEveryRowHasBytesAndEveryObjectARow(services, unfinishedUploads);

    // The same uploads again, as a client honouring Retry-After does (a restarted SeaweedFS takes writes only once
    // its volume server has registered again, ~20 s: until then the services answer 503 again): accepted, and the
    // bytes served back are the bytes sent.
    const [boxRetry, fileRetry] = await Promise.all(
      [boxUpload, fileUpload].map((u) => retryWhileUnavailable(() => streamUpload(u.url, { headers: u.headers, body: u.body }))),
    );
    expect(boxRetry!.status, boxRetry!.text).toBe(201);
    expect(fileRetry!.status, fileRetry!.text).toBe(201);
    const [boxDownload, fileDownload] = await Promise.all([
      downloadSha256(`${boxes.url}/faults/boxes/base/versions/1.0.0/providers/virtualbox/${name}/${name}.box`),
      downloadSha256(fileUpload.url, { authorization: adminAuth }),
    ]);
    expect(boxDownload).toEqual({ status: 200, sha256: box.sha256(), bytes: box.length });
    expect(fileDownload).toEqual({ status: 200, sha256: disk.sha256(), bytes: disk.length });
    await expectEveryRowHasBytesAndEveryObjectARow(services, unfinishedUploads);
  }

  // The database fault does not depend on the S3 server: once, beside MinIO.
  if (server === 'minio') {
    it('PostgreSQL killed mid-upload: 503, nothing half-stored, the retry succeeds', async () => {
      await uploadThroughFault('postgres', postgres, /database/i);
    }, 300_000);
  }

  it(`${Server} killed mid-upload: 503, nothing half-stored, the retry succeeds`, async () => {
    await uploadThroughFault(server, s3, /storage/i);
  }, 300_000);
});
