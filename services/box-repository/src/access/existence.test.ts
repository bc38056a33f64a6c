// Existence hidden (issue 27): a caller who may not read a thing gets the same answer for it as for a thing that
// does not exist — on read and on write routes — so private organization, box, version and provider names cannot
// be probed. Anonymous callers get 401 for both (a client learns to send credentials); signed-in non-members 404
// for both. Every route with an organization in its path is in the table (checked against the app's route
// table), each probed at a private organization's box and at a private box of a public organization, against the
// same paths with a missing organization or box.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { addMember, createBoxPath, createOrganization, startTestService, uploadRaw, type BoxPath, type TestService } from '../testing/test-service.ts';

let service: TestService;
let outsider: string;
let creator: string;

const hiddenOrg: BoxPath = { org: 'hidden', box: 'inner', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
const missingOrg: BoxPath = { ...hiddenOrg, org: 'ghost' };
const privateBox: BoxPath = { org: 'acme', box: 'secret', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
const missingBox: BoxPath = { ...privateBox, box: 'phantom' };

interface Row {
  route: string;
  url: (p: BoxPath) => string;
  json?: unknown | ((p: BoxPath) => unknown);
  raw?: Buffer;
  /** A multipart upload with one small file. */
  form?: boolean;
  /** HTML pages: the status must agree (their body is a page). */
  page?: boolean;
}

const api = (p: BoxPath) => `/api/organization/${p.org}`;
const box = (p: BoxPath) => `${api(p)}/box/${p.box}`;
const version = (p: BoxPath) => `${box(p)}/version/${p.version}`;
const provider = (p: BoxPath) => `${version(p)}/provider/${p.provider}`;
const arch = (p: BoxPath) => `${provider(p)}/architecture/${p.arch}`;
const O = '/api/organization/:org';
const B = `${O}/box/:box`;
const V = `${B}/version/:version`;
const P = `${V}/provider/:provider`;
const A = `${P}/architecture/:arch`;
const change = { description: 'probing' };

const ROWS: Row[] = [
  { route: `GET ${O}`, url: api },
  ...['PUT', 'PATCH'].map((m) => ({ route: `${m} ${O}`, url: api, json: change })),
  { route: `DELETE ${O}`, url: api },
  { route: `GET ${O}/members`, url: (p) => `${api(p)}/members` },
  { route: `PUT ${O}/members/:username`, url: (p) => `${api(p)}/members/outsider`, json: { role: 'user' } },
  { route: `DELETE ${O}/members/:username`, url: (p) => `${api(p)}/members/outsider` },
  { route: `GET ${O}/box`, url: (p) => `${api(p)}/box` },
  { route: `POST ${O}/box`, url: (p) => `${api(p)}/box`, json: { name: 'another' } },
  { route: `GET ${B}`, url: box },
  ...['PUT', 'PATCH'].map((m) => ({ route: `${m} ${B}`, url: box, json: change })),
  { route: `DELETE ${B}`, url: box },
  { route: `GET ${B}/metadata`, url: (p) => `${box(p)}/metadata` },
  { route: `GET ${B}/version`, url: (p) => `${box(p)}/version` },
  { route: `POST ${B}/version`, url: (p) => `${box(p)}/version`, json: { version_number: '2.0.0' } },
  { route: `GET ${V}`, url: version },
  ...['PUT', 'PATCH'].map((m) => ({ route: `${m} ${V}`, url: version, json: change })),
  { route: `DELETE ${V}`, url: version },
  { route: `GET ${V}/provider`, url: (p) => `${version(p)}/provider` },
  { route: `POST ${V}/provider`, url: (p) => `${version(p)}/provider`, json: { name: 'libvirt' } },
  { route: `GET ${P}`, url: provider },
  ...['PUT', 'PATCH'].map((m) => ({ route: `${m} ${P}`, url: provider, json: change })),
  { route: `DELETE ${P}`, url: provider },
  { route: `GET ${P}/architecture`, url: (p) => `${provider(p)}/architecture` },
  { route: `POST ${P}/architecture`, url: (p) => `${provider(p)}/architecture`, json: { name: 'arm64' } },
  { route: `GET ${A}`, url: arch },
  ...['PUT', 'PATCH'].map((m) => ({ route: `${m} ${A}`, url: arch, json: { default_box: true } })),
  { route: `DELETE ${A}`, url: arch },
  { route: `GET ${A}/file`, url: (p) => `${arch(p)}/file` },
  { route: `DELETE ${A}/file`, url: (p) => `${arch(p)}/file` },
  { route: `POST ${A}/file/get-download-link`, url: (p) => `${arch(p)}/file/get-download-link` },
  { route: `GET ${A}/file/download`, url: (p) => `${arch(p)}/file/download` },
  { route: `POST ${A}/file/upload`, url: (p) => `${arch(p)}/file/upload`, raw: Buffer.from('not a box') },
  { route: `POST ${A}/file`, url: (p) => `${arch(p)}/file`, form: true },
  { route: 'GET /api/v2/vagrant/:org/:box', url: (p) => `/api/v2/vagrant/${p.org}/${p.box}` },
  { route: 'GET /:org/:box', url: (p) => `/${p.org}/${p.box}` },
  {
    route: 'GET /:org/boxes/:box/versions/:version/providers/:provider/:arch/:file_name',
    url: (p) => `/${p.org}/boxes/${p.box}/versions/${p.version}/providers/${p.provider}/${p.arch}/vagrant.box`,
  },
  { route: 'GET /:org', url: (p) => `/${p.org}`, page: true },
  { route: 'GET /:org/boxes/:box', url: (p) => `/${p.org}/boxes/${p.box}`, page: true },
  // The publishing API (cloud-api/), v1 and v2.
  ...(['v1', 'v2'] as const).flatMap(publishingRows),
  // Organizations named in a body.
  { route: 'POST /api/auth/invite', url: () => '/api/auth/invite', json: (p: BoxPath) => ({ email: 'someone@example.test', organization_name: p.org }) },
  { route: 'POST /api/service-accounts', url: () => '/api/service-accounts', json: (p: BoxPath) => ({ organization: p.org }) },
];

function publishingRows(v: 'v1' | 'v2'): Row[] {
  const C = `/api/${v}`;
  const Bx = `${C}/box/:org/:box`;
  const Vx = `${Bx}/version/:version`;
  const Px = `${Vx}/provider/:provider${v === 'v2' ? '/:arch' : ''}`;
  const b = (p: BoxPath) => `${C}/box/${p.org}/${p.box}`;
  const ver = (p: BoxPath) => `${b(p)}/version/${p.version}`;
  const prov = (p: BoxPath) => `${ver(p)}/provider/${p.provider}${v === 'v2' ? `/${p.arch}` : ''}`;
  return [
    { route: `GET ${C}/user/:org`, url: (p) => `${C}/user/${p.org}` },
    { route: `POST ${C}/boxes`, url: () => `${C}/boxes`, json: (p: BoxPath) => ({ username: p.org, name: 'another' }) },
    { route: `GET ${Bx}`, url: b },
    { route: `PUT ${Bx}`, url: b, json: { short_description: 'probing' } },
    { route: `DELETE ${Bx}`, url: b },
    { route: `POST ${Bx}/versions`, url: (p) => `${b(p)}/versions`, json: { version: { version: '2.0.0' } } },
    { route: `GET ${Vx}`, url: ver },
    { route: `PUT ${Vx}`, url: ver, json: { version: { description: 'probing' } } },
    { route: `DELETE ${Vx}`, url: ver },
    { route: `PUT ${Vx}/release`, url: (p) => `${ver(p)}/release` },
    { route: `PUT ${Vx}/revoke`, url: (p) => `${ver(p)}/revoke` },
    { route: `POST ${Vx}/providers`, url: (p) => `${ver(p)}/providers`, json: { provider: { name: 'libvirt' } } },
    { route: `GET ${Px}`, url: prov },
    { route: `PUT ${Px}`, url: prov, json: { provider: {} } },
    { route: `DELETE ${Px}`, url: prov },
    { route: `GET ${Px}/upload`, url: (p) => `${prov(p)}/upload` },
    { route: `GET ${Px}/upload/direct`, url: (p) => `${prov(p)}/upload/direct` },
  ];
}

function uploadForm(): FormData {
  const form = new FormData();
  form.append('file', new Blob(['not a box']), 'vagrant.box');
  return form;
}

interface Answer {
  status: number;
  challenge: string | null;
  body: unknown;
}

/** The answer with the probed names written as placeholders, so a private and a missing path compare equal. */
const jsonOf = (row: Row, path: BoxPath): unknown => (typeof row.json === 'function' ? (row.json as (p: BoxPath) => unknown)(path) : row.json);
/** Whether the row names the probed thing at all (an organization-level route of the public organization does not). */
const names = (row: Row, a: BoxPath, b: BoxPath) => JSON.stringify([row.url(a), jsonOf(row, a)]) !== JSON.stringify([row.url(b), jsonOf(row, b)]);

async function probe(row: Row, path: BoxPath, token: string | undefined): Promise<Answer> {
  const json = jsonOf(row, path);
  const method = row.route.split(' ')[0]!;
  const response = await service.request(method, row.url(path), {
    ...(token ? { token } : {}),
    ...(json !== undefined ? { json } : {}),
    ...(row.raw ? { body: row.raw, headers: { 'content-type': 'application/octet-stream' } } : {}),
    ...(row.form ? { body: uploadForm() } : {}),
  });
  const neutral = (text: string) => text.replaceAll(path.org, '<org>').replaceAll(path.box, '<box>');
  const body = row.page ? response.headers.get('content-type')?.split(';')[0] : JSON.parse(neutral(response.text || 'null'));
  return { status: response.status, challenge: response.headers.get('www-authenticate'), body };
}

beforeAll(async () => {
  service = await startTestService();
  await createOrganization(service, 'acme', { isPublic: true });
  await createOrganization(service, 'hidden', { isPublic: false });
  outsider = (await service.createUser('outsider')).token;
  creator = (await service.createUser('creator')).token;
  await addMember(service, 'acme', 'creator', 'admin');
  await addMember(service, 'hidden', 'creator', 'admin');
  const file = await makeBox();
  for (const path of [hiddenOrg, privateBox]) {
    await createBoxPath(service, creator, path, { isPublic: false });
    const uploaded = await uploadRaw(service, path, file, { token: creator });
    if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
  }
}, 120_000);
afterAll(async () => service?.close());

describe('existence hidden: private things answer as missing ones to non-members', () => {
  it('the table has every route with an organization in its path', () => {
    const table = service.running.app.routeTable.filter((r) => !r.headOfGet && r.url.includes(':org')).map((r) => `${r.method} ${r.url}`);
    const covered = new Set(ROWS.map((row) => row.route));
    expect(table.filter((route) => !covered.has(route))).toEqual([]);
  });

  it('members and global admins still read private things; a member hears 404 for a missing box', async () => {
    for (const token of [creator, service.adminToken]) {
      for (const path of [hiddenOrg, privateBox]) expect((await service.request('GET', `${arch(path)}/file`, { token })).status).toBe(200);
    }
    expect((await service.request('GET', box(missingBox), { token: creator })).status).toBe(404);
  });

  const cases: [string, BoxPath, BoxPath][] = [
    ['a private organization', hiddenOrg, missingOrg],
    ['a private box of a public organization', privateBox, missingBox],
  ];
  for (const [who, expected] of [
    ['anonymous', 401],
    ['a signed-in non-member', 404],
  ] as const) {
    for (const [what, existing, missing] of cases) {
      it(`${who}: ${what} — the same status and body as a missing one, on every route`, async () => {
        const token = who === 'anonymous' ? undefined : outsider;
        const differences: string[] = [];
        for (const row of ROWS) {
          const [hidden, absent] = [await probe(row, existing, token), await probe(row, missing, token)];
          if (JSON.stringify(hidden) !== JSON.stringify(absent))
            differences.push(`${row.route}: ${JSON.stringify(hidden)} vs missing ${JSON.stringify(absent)}`);
          // Members-only things: anonymous callers are asked to authenticate, the others hear "not found".
          if (names(row, existing, missing) && !row.page && hidden.status !== expected)
            differences.push(`${row.route}: ${hidden.status}, expected ${expected}`);
        }
        expect(differences).toEqual([]);
      });
    }
  }
});
