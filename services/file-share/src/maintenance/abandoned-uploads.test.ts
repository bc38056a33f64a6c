// What a file-share process that died mid-upload left on its storage — a local .tmp file, an unfinished S3
// multipart upload under the share's prefix — is removed by the next replica's sweep once old enough; fresh ones
// (an upload still running elsewhere) and other prefixes in the bucket are left alone.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createTestBucket, incompleteUploads, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { startTestShare } from '../testing/test-share.ts';

const DAY = 24 * 3600;

describe('the file share sweeps what interrupted uploads left', () => {
  it('local: removes .tmp files no longer written to, keeps a fresh one', async () => {
    const root = join(await mkdtemp(join(tmpdir(), 'fs-abandoned-')), 'store');
    await mkdir(join(root, '.tmp'), { recursive: true });
    const [old, fresh] = [randomUUID(), randomUUID()];
    await writeFile(join(root, '.tmp', old), 'half an upload');
    await writeFile(join(root, '.tmp', fresh), 'an upload in progress');
    const twoDaysAgo = new Date(Date.now() - 2 * DAY * 1000);
    await utimes(join(root, '.tmp', old), twoDaysAgo, twoDaysAgo);
    const share = await startTestShare({ storage: 'local', localRoot: root });
    try {
      await vi.waitFor(async () => expect(await readdir(join(root, '.tmp'))).toEqual([fresh]), { timeout: 15_000, interval: 100 });
    } finally {
      await share.close();
    }
  });

  it.each(s3Servers)('s3 on $server: aborts unfinished multipart uploads under its prefix once old enough, not those of another prefix', async ({ server }) => {
    const bucket = await createTestBucket('fsabandon', s3Server(server));
    await bucket.client.initiateNewMultipartUpload(bucket.bucket, 'file-share/objects/crashed', {});
    await bucket.client.initiateNewMultipartUpload(bucket.bucket, 'box-repository/objects/elsewhere', {});
    await new Promise((r) => setTimeout(r, 2100)); // older than abandoned_after_seconds (S3 dates have 1 s resolution)
    const share = await startTestShare({ storage: 's3', bucket, overrides: { uploads: { abandoned_after_seconds: 1 } } });
    try {
      await vi.waitFor(async () => expect(await incompleteUploads(bucket)).toEqual(['box-repository/objects/elsewhere']), { timeout: 15_000, interval: 200 });
    } finally {
      await share.close();
    }
  });
});
