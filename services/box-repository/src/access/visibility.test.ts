// What the access matrix's statuses do not cover (issue 11, part-1 tests that were missing): a box's
// `published: false` and `guest_access`; versions that are unreleased or revoked, which non-members must not
// find (404) on every direct route while members do; moderators and admins of organization B acting on
// organization A; and the multipart upload's part names and order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '../testing/boxes.ts';
import {
  addMember,
  archPath,
  createBoxPath,
  createOrganization,
  startTestService,
  uploadRaw,
  type BoxPath,
  type TestService,
} from '../testing/test-service.ts';

let service: TestService;
const tokens: Record<string, string> = {};
let box: Buffer;

const boxUrl = (p: BoxPath) => `/api/organization/${p.org}/box/${p.box}`;
const versionUrl = (p: BoxPath) => `${boxUrl(p)}/version/${p.version}`;
const providerUrl = (p: BoxPath) => `${versionUrl(p)}/provider/${p.provider}`;
const stableDownload = (p: BoxPath) => `/${p.org}/boxes/${p.box}/versions/${p.version}/providers/${p.provider}/${p.arch}/vagrant.box`;
const at = (name: string, extra: Partial<BoxPath> = {}): BoxPath => ({
  org: 'acme',
  box: name,
  version: '1.0.0',
  provider: 'virtualbox',
  arch: 'amd64',
  ...extra,
});

/** Status of a request as `who` (anonymous when no token is known under that name). */
async function as(who: string, method: string, url: string, init: { json?: unknown } = {}): Promise<number> {
  const response = await service.request(method, url, {
    ...(tokens[who] ? { token: tokens[who] } : {}),
    ...(init.json !== undefined ? { json: init.json } : {}),
  });
  return response.status;
}

async function boxWithFile(path: BoxPath, settings: Record<string, unknown>): Promise<void> {
  await createBoxPath(service, tokens.creator!, path, settings);
  const uploaded = await uploadRaw(service, path, box, { token: tokens.creator! });
  if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
}

const listed = async (who: string) =>
  ((await service.request('GET', '/api/organization/acme/box?per_page=100', tokens[who] ? { token: tokens[who] } : {})).body as { name: string }[]).map(
    (b) => b.name,
  );

beforeAll(async () => {
  service = await startTestService();
  box = await makeBox();
  await createOrganization(service, 'acme');
  await createOrganization(service, 'beta');
  for (const name of ['creator', 'member', 'outsider', 'betamod', 'betaadmin', 'bothuser']) tokens[name] = (await service.createUser(name)).token;
  await addMember(service, 'acme', 'creator', 'user');
  await addMember(service, 'acme', 'member', 'user');
  await addMember(service, 'beta', 'outsider', 'user');
  await addMember(service, 'beta', 'betamod', 'moderator');
  await addMember(service, 'beta', 'betaadmin', 'admin');
  // An admin of beta who is a plain member of acme: in acme the acme role counts, not the beta one.
  await addMember(service, 'beta', 'bothuser', 'admin');
  await addMember(service, 'acme', 'bothuser', 'user');
});
afterAll(async () => service?.close());

describe('published: false — a members-only draft', () => {
  const draft = at('draft');
  beforeAll(async () => boxWithFile(draft, { isPublic: true, published: false }));

  it('is not listed, read or downloaded by non-members (401 anonymous, 404 signed in: as if missing); members see all of it', async () => {
    expect(await listed('anonymous')).not.toContain('draft');
    expect(await listed('outsider')).not.toContain('draft');
    expect(await listed('member')).toContain('draft');
    for (const url of [boxUrl(draft), `${boxUrl(draft)}/metadata`, '/acme/draft', stableDownload(draft)]) {
      expect(await as('anonymous', 'GET', url), url).toBe(401);
      expect(await as('outsider', 'GET', url), url).toBe(404);
      expect(await as('member', 'GET', url), url).toBe(200);
    }
  });

  it('publishing it makes it public at once, unpublishing hides it again', async () => {
    expect((await service.request('PATCH', boxUrl(draft), { token: tokens.creator!, json: { published: true } })).status).toBe(200);
    expect(await as('anonymous', 'GET', stableDownload(draft))).toBe(200);
    expect(await listed('anonymous')).toContain('draft');
    expect((await service.request('PATCH', boxUrl(draft), { token: tokens.creator!, json: { published: false } })).status).toBe(200);
    expect(await as('anonymous', 'GET', stableDownload(draft))).toBe(401);
  });
});

describe('guest_access — a private box readable by URL, never listed', () => {
  const guest = at('guest');
  const unpublishedGuest = at('guest-draft');
  beforeAll(async () => {
    await boxWithFile(guest, { isPublic: false, guestAccess: true });
    await boxWithFile(unpublishedGuest, { isPublic: false, guestAccess: true, published: false });
  });

  it('anyone with the URL reads and downloads it (metadata included); lists show it to members only', async () => {
    for (const who of ['anonymous', 'outsider']) {
      for (const url of [boxUrl(guest), `${boxUrl(guest)}/metadata`, '/acme/guest', stableDownload(guest)])
        expect(await as(who, 'GET', url), `${who} ${url}`).toBe(200);
      expect(await listed(who)).not.toContain('guest');
    }
    expect(await listed('member')).toContain('guest');
    const downloaded = await fetch(`${service.url}${stableDownload(guest)}`);
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(box)).toBe(true);
    // Guests read; they change nothing.
    expect(await as('outsider', 'PATCH', boxUrl(guest), { json: { description: 'guest edit' } })).toBe(403);
    expect(await as('anonymous', 'DELETE', boxUrl(guest))).toBe(401);
  });

  it('a guest box that is not published stays members-only', async () => {
    expect(await as('anonymous', 'GET', stableDownload(unpublishedGuest))).toBe(401);
    expect(await as('outsider', 'GET', boxUrl(unpublishedGuest))).toBe(404);
  });

  it('does not reach into a private organization', async () => {
    await createOrganization(service, 'closed', { isPublic: false });
    await addMember(service, 'closed', 'creator', 'user');
    const inside = { ...at('guest-inside'), org: 'closed' };
    await boxWithFile(inside, { isPublic: true, guestAccess: true });
    expect(await as('anonymous', 'GET', stableDownload(inside))).toBe(401);
    expect(await as('outsider', 'GET', boxUrl(inside))).toBe(404);
  });
});

describe('unreleased and revoked versions: 404 for non-members on every direct route', () => {
  const base = at('versions');
  const unreleased = { ...base, version: '2.0.0' };
  const revoked = { ...base, version: '3.0.0' };
  beforeAll(async () => {
    await boxWithFile(base, { isPublic: true });
    for (const [path, status] of [
      [unreleased, 'unreleased'],
      [revoked, 'revoked'],
    ] as const) {
      await boxWithFile(path, {});
      expect((await service.request('PATCH', versionUrl(path), { token: tokens.creator!, json: { status } })).status).toBe(200);
    }
  });

  const directRoutes = (p: BoxPath): [string, string][] => [
    ['GET', versionUrl(p)],
    ['GET', `${versionUrl(p)}/provider`],
    ['GET', providerUrl(p)],
    ['GET', `${providerUrl(p)}/architecture`],
    ['GET', archPath(p)],
    ['GET', `${archPath(p)}/file`],
    ['POST', `${archPath(p)}/file/get-download-link`],
    ['GET', `${archPath(p)}/file/download`],
    ['HEAD', `${archPath(p)}/file/download`],
    ['GET', stableDownload(p)],
    ['HEAD', stableDownload(p)],
  ];

  it.each([
    ['unreleased', unreleased],
    ['revoked', revoked],
  ] as const)('%s: anonymous and outsiders get 404 everywhere; members and global admins 200', async (_status, path) => {
    for (const [method, url] of directRoutes(path)) {
      expect(await as('anonymous', method, url), `anonymous ${method} ${url}`).toBe(404);
      expect(await as('outsider', method, url), `outsider ${method} ${url}`).toBe(404);
      expect(await as('betaadmin', method, url), `admin of another organization ${method} ${url}`).toBe(404);
      expect(await as('member', method, url), `member ${method} ${url}`).toBe(200);
    }
    const admin = await service.request('GET', versionUrl(path), { token: service.adminToken });
    expect(admin.status).toBe(200);
  });

  it("the same box's active version answers everyone; lists and metadata hold only active versions for non-members", async () => {
    for (const [method, url] of directRoutes(base)) expect(await as('anonymous', method, url), `${method} ${url}`).toBe(200);
    const versions = async (who: string) =>
      ((await service.request('GET', `${boxUrl(base)}/version`, tokens[who] ? { token: tokens[who] } : {})).body as { version_number: string }[])
        .map((v) => v.version_number)
        .sort();
    expect(await versions('anonymous')).toEqual(['1.0.0']);
    expect(await versions('outsider')).toEqual(['1.0.0']);
    expect(await versions('member')).toEqual(['1.0.0', '2.0.0', '3.0.0']);
    const metadata = await service.request('GET', `${boxUrl(base)}/metadata`);
    expect((metadata.body.versions as { version: string }[]).map((v) => v.version)).toEqual(['1.0.0']);
  });
});

describe('moderators and admins of organization B acting on organization A', () => {
  const target = at('target');
  beforeAll(async () => boxWithFile(target, { isPublic: true }));

  it('can read what is public in A and change nothing there', async () => {
    for (const who of ['betamod', 'betaadmin']) {
      expect(await as(who, 'GET', boxUrl(target))).toBe(200);
      const refused: [string, string, unknown?][] = [
        ['PATCH', boxUrl(target), { description: `by ${who}` }],
        ['DELETE', boxUrl(target)],
        ['POST', `${boxUrl(target)}/version`, { versionNumber: '9.0.0' }],
        ['PATCH', versionUrl(target), { status: 'revoked' }],
        ['DELETE', providerUrl(target)],
        ['POST', `${providerUrl(target)}/architecture`, { name: 'arm64' }],
        ['DELETE', `${archPath(target)}/file`],
        ['POST', '/api/organization/acme/box', { name: `by-${who}` }],
        ['PATCH', '/api/organization/acme', { description: `by ${who}` }],
        ['PUT', '/api/organization/acme/members/outsider', { role: 'user' }],
        ['DELETE', '/api/organization/acme/members/member'],
      ];
      for (const [method, url, json] of refused) expect(await as(who, method, url, json !== undefined ? { json } : {}), `${who} ${method} ${url}`).toBe(403);
      const upload = await uploadRaw(service, target, box, { token: tokens[who]!, query: 'replace=true' });
      expect(upload.status, `${who} upload`).toBe(403);
    }
    // Nothing changed: the box, its file and the members are as they were.
    const after = await service.request('GET', boxUrl(target));
    expect(after.body.description).toBe('');
    expect((await service.request('GET', `${archPath(target)}/file`)).body.checksum).toBe(sha256(box));
    const members = ((await service.request('GET', '/api/organization/acme/members', { token: tokens.member! })).body as { username: string }[]).map(
      (m) => m.username,
    );
    expect(members).toContain('member');
    expect(members).not.toContain('outsider');
  });

  it('an admin of B who is a plain member of A acts in A as a plain member', async () => {
    expect(await as('bothuser', 'POST', '/api/organization/acme/box', { json: { name: 'own-box' } })).toBe(201);
    expect(await as('bothuser', 'PATCH', '/api/organization/acme/box/own-box', { json: { description: 'mine' } })).toBe(200);
    expect(await as('bothuser', 'PATCH', boxUrl(target), { json: { description: 'not mine' } })).toBe(403);
    expect(await as('bothuser', 'DELETE', '/api/organization/acme/members/member')).toBe(403);
    // In B, the same user is an admin.
    expect(await as('bothuser', 'PUT', '/api/organization/beta/members/member', { json: { role: 'user' } })).toBe(200);
  });
});

describe('multipart upload: part names and order', () => {
  const form = (parts: [string, string | Buffer, string?][]) => {
    const body = new FormData();
    for (const [name, value, fileName] of parts) {
      if (typeof value === 'string' && !fileName) body.append(name, value);
      else body.append(name, new Blob([value]), fileName ?? 'x.box');
    }
    return body;
  };
  let counter = 0;
  const fresh = async () => {
    const path = at(`parts-${++counter}`);
    await createBoxPath(service, tokens.creator!, path);
    return path;
  };
  const upload = async (path: BoxPath, parts: [string, string | Buffer, string?][]) =>
    service.request('POST', `${archPath(path)}/file`, { token: tokens.creator!, body: form(parts) });
  const nothingStored = async (path: BoxPath) => {
    expect((await service.request('GET', `${archPath(path)}/file`, { token: tokens.creator! })).status).toBe(404);
    expect(await service.sql('select * from storage_cleanup')).toEqual([]);
  };

  it('fields around the file part: before (file_name, checksum_type) and after (checksum) all apply', async () => {
    const path = await fresh();
    const response = await upload(path, [
      ['file_name', 'named-first.box'],
      ['checksum_type', 'sha256'],
      ['file', box],
      ['checksum', sha256(box)],
    ]);
    expect(response.status, response.text).toBe(201);
    expect(response.body).toMatchObject({ file_name: 'named-first.box', checksum: sha256(box), checksum_type: 'sha256' });
  });

  it('a file part under another name, alone or beside `file`, is refused with 422 and nothing is stored', async () => {
    const alone = await fresh();
    const response = await upload(alone, [['box', box]]);
    expect(response.status).toBe(422);
    expect(response.body.errors[0]).toMatchObject({ pointer: '/box', rule: 'additionalProperties' });
    await nothingStored(alone);
    const beside = await fresh();
    const second = await upload(beside, [
      ['file', box],
      ['extra', box],
    ]);
    expect(second.status).toBe(422); // was 413, as if something were too large
    expect(second.body.errors[0]).toMatchObject({ pointer: '/extra', rule: 'additionalProperties' });
    await nothingStored(beside);
    const before = await fresh();
    expect(
      (
        await upload(before, [
          ['extra', box],
          ['file', box],
        ])
      ).status,
    ).toBe(422);
    await nothingStored(before);
    const three = await fresh();
    expect(
      (
        await upload(three, [
          ['file', box],
          ['file', box],
          ['file', box],
        ])
      ).status,
    ).toBe(422);
    await nothingStored(three);
  });

  it('a multipart Content-Type without a boundary: 400 (was 500), nothing stored', async () => {
    const path = await fresh();
    const response = await service.request('POST', `${archPath(path)}/file`, {
      token: tokens.creator!,
      headers: { 'content-type': 'multipart/form-data' },
      body: 'x',
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ type: 'https://boxyard.io/problems/validation', errors: [] });
    await nothingStored(path);
  });

  it('fields only, no file part: 422 naming /file', async () => {
    const path = await fresh();
    const response = await upload(path, [['file_name', 'x.box']]);
    expect(response.status).toBe(422);
    expect(response.body.errors[0]).toMatchObject({ pointer: '/file', rule: 'required' });
    await nothingStored(path);
  });
});
