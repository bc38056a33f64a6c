// A box repository process killed (SIGKILL) in the middle of an upload, on each storage driver: what the upload
// left on the storage (local: a temp file under .tmp/; s3: a multipart upload with parts, on MinIO and on
// SeaweedFS) is removed
// by the next replica's sweep, and its clean-up entry goes without a delete of a key that never existed.
// Incomplete uploads outside the service's prefix (another service in the same bucket) are left alone.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generatedBox, generatedBytes, streamUpload } from '@boxyard/test/faults/big-upload.ts';
import { createTestBucket, createTestDatabase, incompleteUploads, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { startService } from '@boxyard/test/bench/box-repository.ts';
import { makeBox } from '../testing/boxes.ts';
import { ADMIN_PASSWORD, archPath, startTestService, uploadRaw, type TestService } from '../testing/test-service.ts';

const MiB = 1024 * 1024;
const path = { org: 'acme', box: 'crash', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** The service in a process of its own (the bench's), to be killed. */
async function startProcess(config: Record<string, unknown>): Promise<{ url: string; child: ChildProcess }> {
  const service = await startService(config);
  children.add(service.child);
  return service;
}

describe.each([{ storage: 'local', server: undefined }, ...s3Servers.map(({ server }) => ({ storage: `s3 on ${server}`, server }))])(
  'a process killed mid-upload ($storage storage)',
  ({ server }) => {
    it('leaves nothing behind once the next replica has swept', { timeout: 120_000 }, async () => {
      const databaseUrl = await createTestDatabase('boxcrash');
      const root = server ? undefined : await mkdtemp(join(tmpdir(), 'boxrepo-crash-'));
      const bucket = server ? await createTestBucket('boxcrash', s3Server(server)) : undefined;
      const storage = bucket
        ? {
            driver: 's3',
            endpoint: bucket.endpoint,
            access_key: bucket.accessKey,
            secret_key: bucket.secretKey,
            bucket: bucket.bucket,
            region: bucket.region,
            prefix: 'box-repository',
          }
        : { driver: 'local', root: root! };
      const secret = randomBytes(32).toString('base64url');
      const replicaOptions = { databaseUrl, ...(root ? { localRoot: root } : {}), ...(bucket ? { storage: 's3' as const, bucket } : {}) };
      let replica: TestService | undefined;
      try {
        const victim = await startProcess({
          server: { host: '127.0.0.1', port: await freePort() },
          metrics: { port: 0 },
          logging: { level: 'silent' },
          database: { url: databaseUrl },
          storage,
          session: { secret },
          admin: { password: ADMIN_PASSWORD },
          rate_limiting: { enabled: false },
        });
        const signIn = await fetch(`${victim.url}/api/auth/signin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
        });
        const token = ((await signIn.json()) as { access_token: string }).access_token;
        const call = (method: string, url: string, json: unknown) =>
          fetch(`${victim.url}${url}`, { method, headers: { 'content-type': 'application/json', 'x-access-token': token }, body: JSON.stringify(json) });
        expect((await call('POST', '/api/organization', { name: path.org })).status).toBe(201);
        let prefix = `/api/organization/${path.org}/box`;
        for (const [url, json] of [
          [prefix, { name: path.box }],
          [`${prefix}/${path.box}/version`, { versionNumber: path.version }],
        ] as const)
          expect((await call('POST', url, json)).status).toBe(201);
        prefix = `${prefix}/${path.box}/version/${path.version}`;
        expect((await call('POST', `${prefix}/provider`, { name: path.provider })).status).toBe(201);
        expect((await call('POST', `${prefix}/provider/${path.provider}/architecture`, { name: path.arch })).status).toBe(201);
        // Another service's unfinished upload in the same bucket: not ours to abort.
        if (bucket) await bucket.client.initiateNewMultipartUpload(bucket.bucket, 'file-share/elsewhere.bin', {});

        // 40 MiB in (past two 16 MiB parts on s3), the process dies as a crash or the OOM killer would end it.
        const leftovers = async () =>
          bucket
            ? (await incompleteUploads(bucket)).filter((key) => key.startsWith('box-repository/'))
            : (await readdir(join(root!, '.tmp')).catch(() => [])).filter((name) => !name.startsWith('.check-'));
        const upload = streamUpload(`${victim.url}${archPath(path)}/file/upload`, {
          headers: { 'x-access-token': token, 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box' },
          body: generatedBox(generatedBytes(96 * MiB)),
          fault: {
            at: 40 * MiB,
            run: async () => {
              await expect.poll(leftovers, { timeout: 30_000 }).toHaveLength(1);
              victim.child.kill('SIGKILL');
              await new Promise((resolve) => victim.child.once('exit', resolve));
            },
          },
        }).catch((error: unknown) => error);
        expect(await upload).toBeInstanceOf(Error); // no answer: the process is gone
        expect(await leftovers()).toHaveLength(1);
        const [registration] = await sqlRows(databaseUrl, 'select storage_key from box_repository.storage_cleanup');
        expect(registration).toBeDefined();

        // The next replica (uploads.abandoned_after_seconds: 1, so the test need not wait a day) sweeps at start and
        // then periodically; the sweep is run here until it has removed the leftover.
        replica = await startTestService({ ...replicaOptions, config: { uploads: { abandoned_after_seconds: 1 } } });
        const box = await makeBox();
        expect((await uploadRaw(replica, path, box, { token: replica.adminToken })).status).toBe(201);
        await expect.poll(async () => (await replica!.running.ctx.cleanup.sweep(), leftovers()), { timeout: 30_000, interval: 500 }).toEqual([]);
        if (bucket) expect(await incompleteUploads(bucket)).toEqual(['file-share/elsewhere.bin']);

        // The crashed upload's entry falls due (48 hours later, made now): its key was never stored, so the sweep
        // drops the entry and deletes nothing.
        await replica.sql(`update storage_cleanup set delete_after = now() - interval '1 minute' where storage_key = $1`, [registration!.storage_key]);
        expect(await replica.running.ctx.cleanup.sweep()).toBe(0);
        expect(await replica.sql('select * from storage_cleanup')).toEqual([]);
        // The box that was stored stays whole.
        const download = await fetch(
          `${replica.url}/${path.org}/boxes/${path.box}/versions/${path.version}/providers/${path.provider}/${path.arch}/vagrant.box`,
          { headers: { 'x-access-token': replica.adminToken } },
        );
        expect(Buffer.from(await download.arrayBuffer()).equals(box)).toBe(true);
      } finally {
        if (bucket) for (const key of await incompleteUploads(bucket)) await bucket.client.removeIncompleteUpload(bucket.bucket, key);
        await replica?.close(); // removes the bucket
        if (root) await rm(root, { recursive: true, force: true });
      }
    });
  },
);

async function sqlRows(databaseUrl: string, text: string): Promise<{ storage_key: string }[]> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ storage_key: string }>(text)).rows;
  } finally {
    await client.end();
  }
}
