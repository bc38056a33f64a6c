// Publishing with Debian's unmodified Packer 1.6.6: a `null` source, `artifice` naming a box file and the built-in
// `vagrant-cloud` post-processor with `vagrant_cloud_url` at the box repository's API v1, into a box that exists
// (Packer never creates one), direct and with `no_direct_upload`, on both storage drivers. Running it again for
// the same version fails, saying why, and changes nothing; `vagrant box add` gets what Packer published.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '@boxyard/box-repository/testing/boxes.ts';
import { createOrganization, startTestService, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { finished, type Finished } from '../harness/child-output.ts';

const PACKER = process.env.PACKER_BIN ?? '/usr/bin/packer';
const VAGRANT = process.env.VAGRANT_BIN ?? '/usr/bin/vagrant';

describe.each(['s3', 'local'] as const)('Packer vagrant-cloud post-processor (%s storage)', (storage) => {
  let service: TestService;
  let home: string;
  let key: string;
  let box: Buffer;

  const run = (command: string, args: string[], env: Record<string, string> = {}): Promise<Finished> => {
    const child = spawn(command, args, {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        CHECKPOINT_DISABLE: '1',
        PACKER_NO_COLOR: '1',
        VAGRANT_HOME: join(home, 'vagrant.d'),
        VAGRANT_CHECKPOINT_DISABLE: '1',
        ...env,
      },
      cwd: home,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return finished(child);
  };
  const packer = async (version: string, direct: boolean) => {
    const template = {
      builders: [{ type: 'null', communicator: 'none' }],
      'post-processors': [
        [
          { type: 'artifice', files: ['t.box'] },
          { type: 'vagrant-cloud', box_tag: 'acme/ci', version, vagrant_cloud_url: `${service.url}/api/v1`, access_token: key, no_direct_upload: !direct },
        ],
      ],
    };
    await writeFile(join(home, 'template.json'), JSON.stringify(template));
    return run(PACKER, ['build', 'template.json']);
  };
  const state = async () => ({
    versions: (await service.request('GET', '/api/organization/acme/box/ci/version?per_page=100', { token: service.adminToken })).body.map(
      (v: { version_number: string; status: string }) => [v.version_number, v.status],
    ),
    objects: (await service.storedObjects()).sort(),
  });

  beforeAll(async () => {
    service = await startTestService({ storage });
    home = await mkdtemp(join(tmpdir(), 'packer-'));
    await createOrganization(service, 'acme');
    // A moderator's key: it may publish into a box someone else created.
    const created = await service.request('POST', '/api/service-accounts', {
      token: service.adminToken,
      json: { organization: 'acme', role: 'moderator', description: 'Packer' },
    });
    key = created.body.token;
    expect((await service.request('POST', '/api/organization/acme/box', { token: service.adminToken, json: { name: 'ci', is_public: true } })).status).toBe(
      201,
    );
    box = await makeBox({ fillerBytes: 200_000 });
    await writeFile(join(home, 't.box'), box);
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  for (const [version, direct] of [
    ['1.0.0', true],
    ['1.1.0', false],
  ] as const) {
    it(`publishes ${version} ${direct ? 'direct' : 'through the service (no_direct_upload)'} and releases it`, async () => {
      const result = await packer(version, direct);
      expect(result.code, result.output).toBe(0);
      expect(result.output).toMatch(/Version successfully released/);
      const file = await service.request('GET', `/api/organization/acme/box/ci/version/${version}/provider/virtualbox/architecture/unknown/file`, {
        token: service.adminToken,
      });
      expect(file.body).toMatchObject({ sha256: sha256(box), size: box.length });
      expect((await service.request('GET', `/api/organization/acme/box/ci/version/${version}`, { token: service.adminToken })).body.status).toBe('active');
    }, 60_000);
  }

  it('fails clearly when run again for the same version, and changes nothing', async () => {
    const before = await state();
    const result = await packer('1.1.0', true);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/Error creating provider: Provider 'virtualbox' already exists in version 1\.1\.0/);
    expect(await state()).toEqual(before);
  }, 60_000);

  it('vagrant box add gets the box Packer published', async () => {
    const result = await run(VAGRANT, ['box', 'add', 'acme/ci', '--provider', 'virtualbox'], { VAGRANT_SERVER_URL: service.url });
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/Successfully added box 'acme\/ci' \(v1\.1\.0\)/);
  }, 60_000);
});
