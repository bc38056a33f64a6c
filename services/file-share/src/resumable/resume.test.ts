// Real tus clients, killed mid-upload, resumed by a new process against ANOTHER replica (two file-share instances
// on one database and one bucket / directory): the stored file's sha256 matches.
// - tus-js-client (npm), s3 driver on each of the run's S3 servers: 256 MiB in 8 MiB chunks (the issue names 1 GiB; `make bench` section
//   `resumable` sends 1 GiB through tus; 256 MiB keeps this file well under a minute);
// - Debian's python3-tuspy, local driver, sha1 Upload-Checksum on every chunk: 64 MiB in 4 MiB chunks.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, s3Server, s3Servers, type S3ServerName } from '@boxyard/test/harness/fixtures.ts';
import { adminAuth, bucketKeys, eventually, sharedSecret, startTestShare, type TestShare } from '../testing/test-share.ts';
import { randomFile, startTusClient } from '../testing/tus-clients.ts';

const MiB = 1024 * 1024;

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'fs-tus-resume-'));
});
afterAll(() => rm(work, { recursive: true, force: true }));

async function sha256Of(stream: AsyncIterable<Buffer>): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk);
  return hash.digest('hex');
}

async function offsetOn(share: TestShare, uploadPath: string): Promise<number> {
  const response = await fetch(`${share.url}${uploadPath}`, { method: 'HEAD', headers: { authorization: adminAuth, 'tus-resumable': '1.0.0' } });
  expect(response.status).toBe(200);
  return Number(response.headers.get('upload-offset'));
}

async function twoReplicas(storage: 's3' | 'local', maxBytes: number, server?: S3ServerName): Promise<[TestShare, TestShare]> {
  const overrides = { uploads: { max_bytes: maxBytes } };
  const sessionSecret = sharedSecret();
  const first = await startTestShare({ storage, overrides, sessionSecret, ...(server ? { bucket: await createTestBucket('fs', s3Server(server)) } : {}) });
  const second = await startTestShare({
    storage,
    overrides,
    sessionSecret,
    databaseUrl: first.databaseUrl,
    ...(first.bucket ? { bucket: first.bucket } : {}),
    ...(first.localRoot ? { localRoot: first.localRoot } : {}),
  });
  return [first, second];
}

async function storedSha256(share: TestShare, path: string): Promise<string | null> {
  return (await share.share.pool.maybeOneFirst(sql.unsafe`select sha256 from entries where path = ${path}`)) as string | null;
}

describe('a killed tus upload resumes on another replica', () => {
  it.each(s3Servers)(
    'tus-js-client, s3 driver on $server, 256 MiB: killed at ~40 %, resumed by a new process against the other replica',
    { timeout: 120_000 },
    async ({ server }) => {
      const size = 256 * MiB;
      const file = join(work, `js-${server}.bin`);
      const expected = await randomFile(file, size);
      const [a, b] = await twoReplicas('s3', size, server);
      try {
        const args = { file, authorization: adminAuth, path: '/resumed/js.bin', chunkBytes: 8 * MiB };
        const first = startTusClient('js', { ...args, endpoint: `${a.url}/api/uploads` }, 0.4 * size);
        expect(await first.exit).toBeNull(); // killed, not finished
        const uploadPath = new URL(await first.url).pathname;
        const offset = await offsetOn(b, uploadPath);
        expect(offset).toBeGreaterThan(0);
        expect(offset).toBeLessThan(size);
        expect(await storedSha256(a, '/resumed/js.bin')).toBeNull(); // nothing visible yet

        const second = startTusClient('js', { ...args, endpoint: `${b.url}/api/uploads`, uploadUrl: `${b.url}${uploadPath}` });
        expect(await second.exit).toBe(0);
        expect(second.lines).toContain('done');
        expect(await storedSha256(a, '/resumed/js.bin')).toBe(expected);
        const download = await fetch(`${a.url}/resumed/js.bin`, { headers: { authorization: adminAuth } });
        expect(await sha256Of(download.body as unknown as AsyncIterable<Buffer>)).toBe(expected);
        await eventually(async () => (await bucketKeys(a)).every((key) => !key.includes('/uploads/')));
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    },
  );

  it('python3-tuspy, local driver, 64 MiB with sha1 checksums: killed at ~40 %, resumed against the other replica', { timeout: 120_000 }, async () => {
    const size = 64 * MiB;
    const file = join(work, 'py.bin');
    const expected = await randomFile(file, size);
    const [a, b] = await twoReplicas('local', size);
    try {
      const args = { file, authorization: adminAuth, path: '/resumed/py.bin', chunkBytes: 4 * MiB };
      const first = startTusClient('py', { ...args, endpoint: `${a.url}/api/uploads` }, 0.4 * size);
      expect(await first.exit).toBeNull();
      const uploadPath = new URL(await first.url).pathname;
      const offset = await offsetOn(b, uploadPath);
      expect(offset).toBeGreaterThanOrEqual(size * 0.4);
      expect(offset).toBeLessThan(size);

      const second = startTusClient('py', { ...args, endpoint: `${b.url}/api/uploads`, uploadUrl: `${b.url}${uploadPath}` });
      expect(await second.exit).toBe(0);
      expect(await storedSha256(b, '/resumed/py.bin')).toBe(expected);
      const download = await fetch(`${b.url}/resumed/py.bin`, { headers: { authorization: adminAuth } });
      expect(await sha256Of(download.body as unknown as AsyncIterable<Buffer>)).toBe(expected);
      expect(await sha256Of(createReadStream(file))).toBe(expected);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
