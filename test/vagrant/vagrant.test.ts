// The real Vagrant client (Debian's vagrant 2.3.4) against the box repository on the s3 driver:
// `vagrant box add org/box` with VAGRANT_SERVER_URL for a public box, a private box with a service-account key
// (header and ?access_token= forms), an interrupted download resumed with a Range request, and the checksum
// check (a stored file that no longer matches its published sha256 is refused by Vagrant).
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '@boxyard/box-repository/testing/boxes.ts';
import {
  archPath,
  createBoxPath,
  createOrganization,
  startTestService,
  uploadRaw,
  type BoxPath,
  type TestService,
  type TestServiceOptions,
} from '@boxyard/box-repository/testing/test-service.ts';
import { finished, type Finished } from '../harness/child-output.ts';

const VAGRANT = process.env.VAGRANT_BIN ?? '/usr/bin/vagrant';
const MiB = 1024 * 1024;

/** Runs the real vagrant with its own HOME, asking `serverUrl` for boxes by name. */
function runVagrant(
  client: { home: string; serverUrl: string },
  args: string[],
  env: Record<string, string> = {},
  onSpawn?: (pid: number) => void,
): Promise<Finished> {
  const child = spawn(VAGRANT, args, {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: client.home,
      VAGRANT_HOME: join(client.home, 'vagrant.d'),
      VAGRANT_CHECKPOINT_DISABLE: '1',
      VAGRANT_SERVER_URL: client.serverUrl,
      ...env,
    },
    // Its own process group, so a test can kill vagrant and its curl together.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run = finished(child);
  if (child.pid) onSpawn?.(child.pid);
  return run;
}

/** A box repository on MinIO with organization `acme`, a scratch Vagrant home, and a service-account key for acme. */
async function startForVagrant(options: TestServiceOptions): Promise<{ service: TestService; vagrantHome: string; serviceAccountKey: string }> {
  const service = await startTestService({ storage: 's3', ...options });
  const vagrantHome = await mkdtemp(join(tmpdir(), 'vagrant-home-'));
  await createOrganization(service, 'acme');
  const key = await service.request('POST', '/api/service-accounts', {
    token: service.adminToken,
    json: { organization: 'acme', description: 'vagrant client' },
  });
  expect(key.status).toBe(201);
  return { service, vagrantHome, serviceAccountKey: key.body.token };
}

/** Holds a download after `afterBytes` until released: lets the test interrupt Vagrant mid-download. */
class DownloadGate {
  armedAfter: number | undefined;
  sentBytes = 0;
  private waiters: (() => void)[] = [];

  transform(): Transform {
    const holdAfter = this.armedAfter;
    let passed = 0;
    const stream: Transform = new Transform({
      transform: (chunk: Buffer, _encoding, callback: TransformCallback) => {
        if (holdAfter === undefined || passed + chunk.length <= holdAfter) {
          passed += chunk.length;
          this.sentBytes += chunk.length;
          callback(null, chunk);
          return;
        }
        const head = chunk.subarray(0, holdAfter - passed);
        passed += head.length;
        this.sentBytes += head.length;
        if (head.length > 0) stream.push(head);
        this.waiters.push(() => callback(new Error('download released by the test')));
      },
    });
    return stream;
  }

  release(): void {
    this.armedAfter = undefined;
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

describe('vagrant box add against the box repository', () => {
  let service: TestService;
  let vagrantHome: string;
  const gate = new DownloadGate();
  const ranges: (string | undefined)[] = [];
  let serviceAccountKey: string;

  const run = (args: string[], env: Record<string, string> = {}, onSpawn?: (pid: number) => void): Promise<Finished> =>
    runVagrant({ home: vagrantHome, serverUrl: service.url }, args, env, onSpawn);

  const boxList = async () => (await run(['box', 'list'])).output;

  async function publish(path: BoxPath, box: Buffer, options: { isPublic: boolean }) {
    await createBoxPath(service, service.adminToken, path, { isPublic: options.isPublic, description: `${path.box} for Vagrant` });
    const uploaded = await uploadRaw(service, path, box, { token: service.adminToken, query: 'replace=true' });
    expect(uploaded.status, uploaded.text).toBeLessThan(300);
    return uploaded.body as { sha256: string };
  }

  beforeAll(async () => {
    ({ service, vagrantHome, serviceAccountKey } = await startForVagrant({
      hooks: { downloadTransform: () => gate.transform(), onDownloadRequest: (range) => ranges.push(range) },
    }));
  });

  afterAll(async () => {
    gate.release();
    await service?.close();
    if (vagrantHome) await rm(vagrantHome, { recursive: true, force: true });
  });

  it('adds a public box by name from VAGRANT_SERVER_URL, anonymously', async () => {
    await publish({ org: 'acme', box: 'public-box', version: '1.2.3', provider: 'virtualbox', arch: 'amd64' }, await makeBox(), { isPublic: true });
    const added = await run(['box', 'add', 'acme/public-box']);
    expect(added.code, added.output).toBe(0);
    expect(added.output).toContain("Successfully added box 'acme/public-box' (v1.2.3) for 'virtualbox'");
    expect(await boxList()).toMatch(/acme\/public-box\s+\(virtualbox, 1\.2\.3\)/);
  });

  it('adds a private box with a service-account key in VAGRANT_CLOUD_TOKEN, and only with it', async () => {
    await publish({ org: 'acme', box: 'private-box', version: '2.0.0', provider: 'libvirt', arch: 'amd64' }, await makeBox({ provider: 'libvirt' }), {
      isPublic: false,
    });
    const refused = await run(['box', 'add', 'acme/private-box']);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('The requested URL returned error: 401');
    expect(await boxList()).not.toContain('acme/private-box');

    const added = await run(['box', 'add', 'acme/private-box'], { VAGRANT_CLOUD_TOKEN: serviceAccountKey });
    expect(added.code, added.output).toBe(0);
    expect(added.output).toContain("Successfully added box 'acme/private-box' (v2.0.0) for 'libvirt'");
  });

  it('adds a private box with the key sent as ?access_token= (VAGRANT_SERVER_ACCESS_TOKEN_BY_URL)', async () => {
    await publish({ org: 'acme', box: 'private-url', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' }, await makeBox(), { isPublic: false });
    const added = await run(['box', 'add', 'acme/private-url'], { VAGRANT_CLOUD_TOKEN: serviceAccountKey, VAGRANT_SERVER_ACCESS_TOKEN_BY_URL: '1' });
    expect(added.code, added.output).toBe(0);
    expect(await boxList()).toMatch(/acme\/private-url\s+\(virtualbox, 1\.0\.0\)/);
  });

  it('resumes an interrupted download with a Range request', async () => {
    const path = { org: 'acme', box: 'big-box', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    const box = await makeBox({ gzip: false, fillerBytes: 24 * MiB });
    await publish(path, box, { isPublic: true });
    ranges.length = 0;
    gate.sentBytes = 0;
    gate.armedAfter = 6 * MiB; // the first download stops here, as if the network went away
    let pid = 0;
    const first = run(['box', 'add', 'acme/big-box'], {}, (p) => (pid = p));
    const tmpDir = join(vagrantHome, 'vagrant.d', 'tmp');
    const partialSize = async () => {
      const names = await readdir(tmpDir).catch(() => [] as string[]);
      const partial = names.find((n) => n.startsWith('box') && !n.endsWith('.lock'));
      return partial ? (await stat(join(tmpDir, partial))).size : 0;
    };
    // Wait until curl has written part of the box, then kill vagrant and its curl (the whole process group).
    await expect.poll(partialSize, { timeout: 60_000, interval: 200 }).toBeGreaterThan(MiB);
    process.kill(-pid, 'SIGKILL');
    await first;
    gate.release();
    const kept = await partialSize();
    expect(kept).toBeGreaterThan(MiB);
    expect(kept).toBeLessThan(box.length);

    const second = await run(['box', 'add', 'acme/big-box']);
    expect(second.code, second.output).toBe(0);
    expect(await boxList()).toMatch(/acme\/big-box\s+\(virtualbox, 1\.0\.0\)/);
    // The second download asked only for the rest: `Range: bytes=N-` from where the first one stopped.
    const resumed = ranges.map((r) => /^bytes=(\d+)-$/.exec(r ?? '')).find((m) => m && Number(m[1]) > 0);
    expect(resumed, `ranges seen: ${JSON.stringify(ranges)}`).toBeTruthy();
    expect(Number(resumed![1])).toBeGreaterThan(MiB);
  });

  it('refuses a box whose bytes no longer match the published sha256 (Vagrant verifies the checksum)', async () => {
    const path = { org: 'acme', box: 'rotten-box', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    const published = await publish(path, await makeBox(), { isPublic: true });
    // Corrupt the stored object behind the service's back (bit rot, a bad restore): the metadata still
    // publishes the sha256 computed at upload, which the downloaded bytes no longer have.
    const info = await service.request('GET', `${archPath(path)}/file`);
    expect(info.body.sha256).toBe(published.sha256);
    const [row] = await storageKeys(service);
    const corrupt = await makeBox({ fillerBytes: 1024 });
    await service.bucket!.client.putObject(service.bucket!.bucket, row!, corrupt, corrupt.length);

    const added = await run(['box', 'add', 'acme/rotten-box']);
    expect(added.code).not.toBe(0);
    expect(added.output).toContain('The checksum of the downloaded box did not match the expected');
    expect(added.output).toContain(`Expected: ${published.sha256}`);
    expect(await boxList()).not.toContain('acme/rotten-box');
  });
});

/** Object names of the files of box `rotten-box` (the only one uploaded last). */
async function storageKeys(service: TestService): Promise<string[]> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: service.databaseUrl });
  await client.connect();
  try {
    const result = await client.query<{ storage_key: string }>(`
      select f.storage_key from box_repository.files f
      join box_repository.architectures a on a.id = f.architecture_id join box_repository.providers p on p.id = a.provider_id
      join box_repository.versions v on v.id = p.version_id join box_repository.boxes b on b.id = v.box_id
      where b.name = 'rotten-box'`);
    return result.rows.map((r) => `box-repository/${r.storage_key}`);
  } finally {
    await client.end();
  }
}

describe('vagrant box add through redirects to presigned storage URLs (download_links.redirect_to_storage)', () => {
  let service: TestService;
  let vagrantHome: string;
  let serviceAccountKey: string;

  const vagrant = (args: string[], env: Record<string, string> = {}): Promise<Finished> => runVagrant({ home: vagrantHome, serverUrl: service.url }, args, env);

  beforeAll(async () => {
    ({ service, vagrantHome, serviceAccountKey } = await startForVagrant({
      config: { download_links: { redirect_to_storage: true, storage_url_ttl_seconds: 30 } },
    }));
  });

  afterAll(async () => {
    await service?.close();
    if (vagrantHome) await rm(vagrantHome, { recursive: true, force: true });
  });

  async function publish(path: BoxPath, box: Buffer, isPublic: boolean) {
    await createBoxPath(service, service.adminToken, path, { isPublic });
    const uploaded = await uploadRaw(service, path, box, { token: service.adminToken });
    expect(uploaded.status, uploaded.text).toBe(201);
  }
  const downloadCount = async (box: string) =>
    (await service.request('GET', `${archPath({ org: 'acme', box, version: '1.0.0', provider: 'virtualbox', arch: 'amd64' })}/file`)).body as {
      download_count: number;
    };

  it('answers a download with 302 to the storage endpoint, which serves the bytes (ranges too)', async () => {
    const box = await makeBox({ gzip: false, fillerBytes: MiB });
    await publish({ org: 'acme', box: 'redirected', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' }, box, true);
    const fileUrl = `${service.url}/acme/boxes/redirected/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`;
    const answer = await fetch(fileUrl, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('cache-control')).toBe('private, no-store');
    const location = new URL(answer.headers.get('location')!);
    expect(location.origin).toBe(new URL(service.bucket!.endpoint).origin);
    expect(location.searchParams.get('X-Amz-Expires')).toBe('30');
    const followed = await fetch(fileUrl, { headers: { range: 'bytes=10-19' } });
    expect(followed.status).toBe(206);
    expect(Buffer.from(await followed.arrayBuffer()).equals(box.subarray(10, 20))).toBe(true);
    // HEAD still answers from the service (no storage request), with the file's length.
    const head = await fetch(fileUrl, { method: 'HEAD', redirect: 'manual' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(box.length));
  });

  it('lets the real Vagrant client add a public box through the redirect', async () => {
    await publish(
      { org: 'acme', box: 'public-redirect', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' },
      await makeBox({ fillerBytes: 2 * MiB }),
      true,
    );
    const added = await vagrant(['box', 'add', 'acme/public-redirect']);
    expect(added.code, added.output).toBe(0);
    expect(added.output).toContain("Successfully added box 'acme/public-redirect' (v1.0.0) for 'virtualbox'");
    // Counted by the service when it redirects (the bytes themselves never pass through it).
    await expect.poll(async () => (await downloadCount('public-redirect')).download_count, { timeout: 10_000 }).toBe(1);
  });

  it('lets the real Vagrant client add a private box with a key in VAGRANT_CLOUD_TOKEN through the redirect, and only with it', async () => {
    await publish({ org: 'acme', box: 'private-redirect', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' }, await makeBox(), false);
    const refused = await vagrant(['box', 'add', 'acme/private-redirect']);
    expect(refused.code).not.toBe(0);
    const privateAdded = await vagrant(['box', 'add', 'acme/private-redirect'], { VAGRANT_CLOUD_TOKEN: serviceAccountKey });
    expect(privateAdded.code, privateAdded.output).toBe(0);
    expect(privateAdded.output).toContain("Successfully added box 'acme/private-redirect' (v1.0.0) for 'virtualbox'");
  });
});
