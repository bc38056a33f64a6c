// RubyGems-style version strings: accepted on the version routes, ordered as Gem::Version orders them (checked
// against the order Ruby's own Gem::Version gives, written down below) in the database's sort key, in the version
// list, in the Vagrant metadata and in the console's "latest".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { createBoxPath, createOrganization, startTestService, uploadRaw, type TestService } from '../testing/test-service.ts';
import { compareVersions, isVersionString } from './rubygems-version.ts';

// `ruby -e 'puts l.sort_by { |v| Gem::Version.new(v) }'` gives this order (Ruby 3.1, RubyGems 3.3).
const ASCENDING = [
  '0.9',
  '1.a.0.b',
  '1.0.0.a',
  '1.0-beta',
  '1.0.0.rc1',
  '1.0.0.rc2',
  '1.0.0.rc10',
  '1.0.0',
  '1.0.1',
  '1.2.3',
  '1.2.3.4',
  '1.10.0',
  '2.0.0.beta',
  '2.0.0.rc1',
  '2.0.0',
  '2.0.0.1',
  '20241101.275802',
  '20241101.275803',
];
const shuffled = [...ASCENDING].sort((a, b) => ((a.length * 7 + a.charCodeAt(a.length - 1)) % 11) - ((b.length * 7 + b.charCodeAt(b.length - 1)) % 11));

describe('RubyGems version strings', () => {
  it('compares as Gem::Version does', () => {
    expect([...shuffled].sort(compareVersions)).toEqual(ASCENDING);
    expect(compareVersions('1.0', '1.0.0')).toBe(0);
    expect(compareVersions('1.a', '1.0.0.a')).toBe(0);
    expect(compareVersions('1.0.0.rc1', '1.0.0')).toBeLessThan(0);
  });

  it('accepts what RubyGems accepts and refuses the rest', () => {
    for (const good of [...ASCENDING, '007', '1.0-rc-1.2']) expect(isVersionString(good), good).toBe(true);
    for (const bad of ['v1.0', '1..0', '1.0-', '.1', '1.0 ', '', 'a.1', '1.0_1', `1.${'0'.repeat(63)}`]) expect(isVersionString(bad), bad).toBe(false);
  });
});

describe('versions ordered as RubyGems orders them', () => {
  let service: TestService;
  const t = () => service.adminToken;
  beforeAll(async () => {
    service = await startTestService();
    await createOrganization(service, 'gems');
  });
  afterAll(async () => service?.close());

  it('the SQL sort key orders every case as compareVersions does', async () => {
    const rows = await service.sql<{ v: string }>('select v from unnest($1::text[]) as v order by rubygems_version_key(v) collate "C"', [shuffled]);
    expect(rows.map((r) => r.v)).toEqual(ASCENDING);
    const [equal] = await service.sql<{ same: boolean }>(
      "select rubygems_version_key('1.0') = rubygems_version_key('1.0.0') and rubygems_version_key('1.a') = rubygems_version_key('1.0.0.a') as same",
    );
    expect(equal!.same).toBe(true);
  });

  it('lists, serves in metadata and shows as latest the RubyGems order', async () => {
    const box = await makeBox();
    for (const version of shuffled) {
      const path = { org: 'gems', box: 'ordered', version, provider: 'virtualbox', arch: 'amd64' };
      await createBoxPath(service, t(), path, { isPublic: true });
      expect((await uploadRaw(service, path, box, { token: t() })).status).toBe(201);
    }
    const listed = await service.request('GET', '/api/organization/gems/box/ordered/version?per_page=100', { token: t() });
    expect(listed.body.map((v: { version_number: string }) => v.version_number)).toEqual([...ASCENDING].reverse());
    const metadata = await service.request('GET', '/gems/ordered', { headers: { accept: 'application/json' } });
    expect(metadata.body.versions.map((v: { version: string }) => v.version)).toEqual([...ASCENDING].reverse());
    const console = await service.request('GET', '/gems', { token: t() });
    expect(console.text).toMatch(/Latest <span class="badge ?">v20241101\.275803<\/span>/);
  });

  it('refuses a string RubyGems reads as an existing version, and one it would refuse', async () => {
    await createBoxPath(service, t(), { org: 'gems', box: 'dupes', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' });
    const same = await service.request('POST', '/api/organization/gems/box/dupes/version', { token: t(), json: { version_number: '1.0' } });
    expect(same.status).toBe(409);
    expect(same.body.detail ?? same.body.title).toMatch(/1\.0 already exists/);
    const bad = await service.request('POST', '/api/organization/gems/box/dupes/version', { token: t(), json: { version_number: '1.0-' } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([expect.objectContaining({ pointer: '/version_number', rule: 'pattern' })]);
  });
});
