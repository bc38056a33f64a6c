// Publishing with Debian's unmodified `vagrant cloud` (vagrant 2.3.4, vagrant_cloud gem 3.0.5) into the box
// repository's Vagrant Cloud API v1, on both storage drivers (s3 on each of the run's S3 servers): login with a service-account key, publish direct and
// with --no-direct-upload, revoke and release, box show, search, provider upload, box delete; then `vagrant box
// add` of what was published verifies the same sha256, and the file served has the bytes published.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '@boxyard/box-repository/testing/boxes.ts';
import { createOrganization, startTestService, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { finished, type Finished } from '../harness/child-output.ts';
import { createTestBucket, s3Server, s3Servers } from '../harness/fixtures.ts';

const VAGRANT = process.env.VAGRANT_BIN ?? '/usr/bin/vagrant';

const drivers = [
  { storage: 'local', server: undefined, label: 'local storage' },
  ...s3Servers.map(({ server }) => ({ storage: 's3', server, label: `s3 storage on ${server}` }) as const),
] as const;

describe.each(drivers)('vagrant cloud publishing ($label)', ({ storage, server }) => {
  let service: TestService;
  let home: string;
  let key: string;
  const files: Record<string, Buffer> = {};

  const vagrant = (args: string[], env: Record<string, string> = {}): Promise<Finished> => {
    const child = spawn(VAGRANT, args, {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        VAGRANT_HOME: join(home, 'vagrant.d'),
        VAGRANT_CHECKPOINT_DISABLE: '1',
        VAGRANT_SERVER_URL: service.url,
        ...env,
      },
      cwd: home,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return finished(child);
  };
  const ok = async (args: string[], env: Record<string, string> = {}) => {
    const result = await vagrant(args, env);
    expect(result.code, `vagrant ${args.join(' ')}\n${result.output}`).toBe(0);
    return result.output;
  };
  const version = async (v: string) => (await service.request('GET', `/api/organization/acme/box/t/version/${v}`, { token: service.adminToken })).body;
  const fileOf = async (v: string) =>
    (await service.request('GET', `/api/organization/acme/box/t/version/${v}/provider/virtualbox/architecture/unknown/file`, { token: service.adminToken }))
      .body;

  beforeAll(async () => {
    service = await startTestService({ storage, ...(server ? { bucket: await createTestBucket('boxrepo', s3Server(server)) } : {}) });
    home = await mkdtemp(join(tmpdir(), 'vagrant-cloud-'));
    await createOrganization(service, 'acme');
    const created = await service.request('POST', '/api/service-accounts', {
      token: service.adminToken,
      json: { organization: 'acme', description: 'CI publisher' },
    });
    key = created.body.token;
    for (const [name, filler] of [
      ['a.box', 300_000],
      ['b.box', 200_000],
      ['c.box', 100_000],
    ] as const) {
      files[name] = await makeBox({ fillerBytes: filler });
      await writeFile(join(home, name), files[name]);
    }
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('logs in with a service-account key and publishes a new box, direct, released', async () => {
    expect(await ok(['cloud', 'auth', 'login', '--token', key])).toMatch(/logged in/i);
    const output = await ok(['cloud', 'publish', 'acme/t', '1.0.0', 'virtualbox', 'a.box', '--release', '-f']);
    expect(output).toMatch(/Complete! Published acme\/t/);
    expect(await version('1.0.0')).toMatchObject({ status: 'active' });
    expect(await fileOf('1.0.0')).toMatchObject({ sha256: sha256(files['a.box']!), size: files['a.box']!.length });
  }, 60_000);

  it('publishes a RubyGems-style version through the service (--no-direct-upload)', async () => {
    await ok(['cloud', 'publish', 'acme/t', '1.1.0.1', 'virtualbox', 'b.box', '--release', '-f', '--no-direct-upload']);
    expect(await version('1.1.0.1')).toMatchObject({ status: 'active' });
    expect(await fileOf('1.1.0.1')).toMatchObject({ sha256: sha256(files['b.box']!) });
  }, 60_000);

  it('revokes and releases a version; metadata lists active versions only', async () => {
    await ok(['cloud', 'version', 'revoke', 'acme/t', '1.1.0.1', '-f']);
    expect(await version('1.1.0.1')).toMatchObject({ status: 'revoked' });
    const metadata = await service.request('GET', '/acme/t', { token: service.adminToken, headers: { accept: 'application/json' } });
    expect(metadata.body.versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    await ok(['cloud', 'version', 'release', 'acme/t', '1.1.0.1', '-f']);
    expect(await version('1.1.0.1')).toMatchObject({ status: 'active' });
  }, 60_000);

  it('shows the box and finds it by search', async () => {
    const shown = await ok(['cloud', 'box', 'show', 'acme/t']);
    expect(shown).toMatch(/Box:\s+acme\/t/);
    expect(shown).toMatch(/Current Version:\s+1\.1\.0\.1/);
    expect(shown).toMatch(/Versions:\s+1\.1\.0\.1, 1\.0\.0/);
    const found = await ok(['cloud', 'search', 't', '--short']);
    expect(found).toContain('acme/t');
  }, 60_000);

  it('uploads to an existing provider (provider upload), leaving the version unreleased', async () => {
    await ok(['cloud', 'version', 'create', 'acme/t', '1.2.0']);
    await ok(['cloud', 'provider', 'create', 'acme/t', 'virtualbox', '1.2.0']);
    await ok(['cloud', 'provider', 'upload', 'acme/t', 'virtualbox', '1.2.0', 'c.box']);
    expect(await version('1.2.0')).toMatchObject({ status: 'unreleased' });
    expect(await fileOf('1.2.0')).toMatchObject({ sha256: sha256(files['c.box']!) });
  }, 60_000);

  it('vagrant box add gets what was published, with its sha256 verified', async () => {
    const output = await ok(['box', 'add', 'acme/t', '--provider', 'virtualbox'], { VAGRANT_CLOUD_TOKEN: key });
    expect(output).toMatch(/Successfully added box 'acme\/t' \(v1\.1\.0\.1\)/);
    const metadata = await service.request('GET', '/acme/t', { token: service.adminToken, headers: { accept: 'application/json' } });
    const entry = metadata.body.versions[0].providers[0];
    expect(entry).toMatchObject({ checksum_type: 'sha256', checksum: sha256(files['b.box']!) });
    const download = await fetch(entry.url, { headers: { authorization: `Bearer ${key}` } });
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(files['b.box']!));
  }, 60_000);

  it('deletes the box with its files', async () => {
    await ok(['cloud', 'box', 'delete', 'acme/t', '-f']);
    expect((await service.request('GET', '/api/organization/acme/box/t', { token: service.adminToken })).status).toBe(404);
    await service.running.ctx.cleanup.sweep();
    expect((await service.storedObjects()).filter((k) => !k.includes('.check-'))).toEqual([]);
  }, 60_000);
});
