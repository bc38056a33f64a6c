// The box repository's access matrix: every route of the running app × every role, each cell a real request
// on the run's PostgreSQL and MinIO. Roles: anonymous, a user of another organization, a member (user role), the
// box's creator, a moderator, an organization admin, a global admin (not a member), service-account keys
// (variant A) of the organization with each role a key can hold and one of another organization, a variant B
// account's session token (clientId/clientSecret exchanged), and credentials that no longer work: an expired and a signed-out session, an expired
// and a deleted service-account key. Below the matrix: what a status code alone does not show.
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAccessMatrix, outcomes, reusable, type MatrixRow, type RoleSpec } from '@boxyard/test/harness/access-matrix.ts';
import { operationalRows } from '@boxyard/test/harness/operational-rows.ts';
import { makeBox } from './testing/boxes.ts';
import { startTestSmtpServer, type TestSmtpServer } from '@boxyard/kit/mail/test-smtp-server.ts';
import {
  ADMIN_PASSWORD,
  addMember,
  archPath,
  createBoxPath,
  createOrganization,
  startTestService,
  USER_PASSWORD,
  type BoxPath,
  type TestService,
} from './testing/test-service.ts';

type Role =
  | 'anonymous'
  | 'outsider'
  | 'member'
  | 'creator'
  | 'moderator'
  | 'orgAdmin'
  | 'globalAdmin'
  | 'serviceAccount'
  | 'moderatorServiceAccount'
  | 'foreignServiceAccount'
  | 'serviceAccountB'
  | 'expiredSession'
  | 'signedOutSession'
  | 'expiredKey'
  | 'deletedKey';

const ROLES: RoleSpec<Role>[] = [
  { name: 'anonymous' },
  { name: 'outsider' },
  { name: 'member' },
  { name: 'creator' },
  { name: 'moderator' },
  { name: 'orgAdmin' },
  { name: 'globalAdmin' },
  { name: 'serviceAccount' },
  { name: 'moderatorServiceAccount' },
  { name: 'foreignServiceAccount' },
  { name: 'serviceAccountB' },
  { name: 'expiredSession' },
  { name: 'signedOutSession' },
  { name: 'expiredKey' },
  { name: 'deletedKey' },
];
/** Roles whose request carries no working credential: 401 wherever a caller must be known. */
const UNAUTHENTICATED: Role[] = ['anonymous', 'expiredSession', 'signedOutSession', 'expiredKey', 'deletedKey'];
const INVALID: Role[] = UNAUTHENTICATED.filter((role) => role !== 'anonymous');
/** Users signing in with a password (the fixtures' users). */
const USERS: Partial<Record<Role, string>> = { outsider: 'outsider', member: 'member', creator: 'creator', moderator: 'moderator', orgAdmin: 'orgadmin' };

const expect_ = (granted: Partial<Record<Role, number>>, otherwise = 403) => outcomes(ROLES, UNAUTHENTICATED, granted, otherwise);
const all = (status: number) => expect_(Object.fromEntries(ROLES.map((r) => [r.name, status])));
const grant = (roles: Role[], status: number) => Object.fromEntries(roles.map((role) => [role, status])) as Partial<Record<Role, number>>;
const signedIn = (status: number) =>
  grant(
    ROLES.map((r) => r.name).filter((r) => !UNAUTHENTICATED.includes(r)),
    status,
  );
const MEMBERS: Role[] = ['member', 'creator', 'moderator', 'orgAdmin', 'globalAdmin', 'serviceAccount', 'moderatorServiceAccount', 'serviceAccountB'];
/** People (signed in with a password); service accounts are refused where only people may act. */
const PEOPLE: Role[] = ['outsider', 'member', 'creator', 'moderator', 'orgAdmin', 'globalAdmin'];
const MANAGERS: Role[] = ['creator', 'moderator', 'orgAdmin', 'globalAdmin', 'moderatorServiceAccount'];
/** Anyone may read public things; a credential that no longer works is refused even there (never read as anonymous). */
const everyone = (status = 200) =>
  expect_({
    ...grant(
      ROLES.map((r) => r.name).filter((r) => !INVALID.includes(r)),
      status,
    ),
  });
const readers = (status = 200) => expect_(grant(MEMBERS, status));
/** Private things: a signed-in non-member hears 404, as for a missing thing (existence hidden). */
const privateReaders = (granted: Role[] = MEMBERS, status = 200) => expect_(grant(granted, status), 404);

let service: TestService;
let smtp: TestSmtpServer;
/** The variant B account of acme: its client credentials (each exchange gives a new session token). */
let clientB: { client_id: string; client_secret: string };
let acmeId: number;
const headers = {} as Record<Role, Record<string, string>>;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}`;
let boxFile: Buffer;
let tlsPair: { cert: string; key: string };

interface Call {
  json?: unknown;
  body?: Buffer | FormData;
  headers?: Record<string, string>;
}

async function send(role: Role, method: string, path: string, call: Call = {}): Promise<number> {
  const sent: Record<string, string> = { ...headers[role], ...call.headers };
  let body: string | Buffer | FormData | undefined = call.body;
  if (call.json !== undefined) {
    sent['content-type'] = 'application/json';
    body = JSON.stringify(call.json);
  }
  const response = await fetch(`${service.url}${path}`, { method, headers: sent, ...(body !== undefined ? { body } : {}), redirect: 'manual' } as RequestInit);
  await response.arrayBuffer();
  return response.status;
}

/** A box created by `creator` in acme, with one version, provider, architecture and (unless `upload: false`) file. */
async function freshBox(options: { isPublic: boolean; upload?: boolean; org?: string }): Promise<BoxPath> {
  const path = { org: options.org ?? 'acme', box: unique(options.isPublic ? 'pub' : 'priv'), version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
  await createBoxPath(service, headers.creator['x-access-token']!, path, { isPublic: options.isPublic });
  if (options.upload !== false) {
    const response = await fetch(`${service.url}${archPath(path)}/file/upload`, {
      method: 'POST',
      headers: { ...headers.creator, 'content-type': 'application/octet-stream' },
      body: boxFile,
    });
    if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${await response.text()}`);
  }
  return path;
}

const boxUrl = (p: BoxPath) => `/api/organization/${p.org}/box/${p.box}`;
const versionUrl = (p: BoxPath) => `${boxUrl(p)}/version/${p.version}`;
const providerUrl = (p: BoxPath) => `${versionUrl(p)}/provider/${p.provider}`;
const vagrantDownload = (p: BoxPath) => `/${p.org}/boxes/${p.box}/versions/${p.version}/providers/${p.provider}/${p.arch}/vagrant.box`;

const A = '/api/organization/:org/box/:box/version/:version/provider/:provider/architecture/:arch';
const P = '/api/organization/:org/box/:box/version/:version/provider/:provider';
const V = '/api/organization/:org/box/:box/version/:version';

let publicBox: BoxPath;
let privateBox: BoxPath;

function rows(): MatrixRow<Role>[] {
  const rows: MatrixRow<Role>[] = operationalRows(ROLES, (role, method, path) => send(role, method, path));
  const add = (route: string, expected: Partial<Record<Role, number>>, call: MatrixRow<Role>['call'], name?: string) =>
    rows.push({ route, expected, call, ...(name ? { name } : {}) });
  /** A read of the public and of the private fixture box. */
  const read = (route: string, url: (p: BoxPath) => string, method = 'GET', ok = 200) => {
    add(`${method} ${route}`, everyone(ok), (role, m) => send(role, m, url(publicBox)), 'public box');
    add(`${method} ${route}`, privateReaders(MEMBERS, ok), (role, m) => send(role, m, url(privateBox)), 'private box');
  };
  /** A change of a fresh box (made again after each success). */
  const change = (route: string, granted: Role[], status: number, request: (p: BoxPath) => [string, Call?], options: { upload?: boolean } = {}) => {
    const fixture = reusable(() => freshBox({ isPublic: true, ...options }));
    add(route, expect_(grant(granted, status)), (role) =>
      fixture((p) => {
        const [url, call] = request(p);
        return send(role, route.split(' ')[0]!, url, call);
      }),
    );
  };

  // Accounts and sessions.
  add('POST /api/auth/signin', all(200), (role) => send(role, 'POST', '/api/auth/signin', { json: { username: 'member', password: USER_PASSWORD } }));
  add('POST /api/auth/signup', all(201), (role) => {
    const username = unique(`signup-${role.toLowerCase()}`);
    return send(role, 'POST', '/api/auth/signup', { json: { username, email: `${username}@example.test`, password: USER_PASSWORD } });
  });
  // Each signed-in role signs out a session of its own made for the purpose (the matrix's token must live on).
  add('POST /api/auth/signout', expect_({ ...grant([...PEOPLE, 'serviceAccountB'], 200) }), async (role) => {
    const token = await freshSession(role);
    return token ? send('anonymous', 'POST', '/api/auth/signout', { headers: { 'x-access-token': token } }) : send(role, 'POST', '/api/auth/signout');
  });
  add('GET /api/user', expect_(signedIn(200)), (role, m) => send(role, m, '/api/user'));
  add('GET /api/user/profile', expect_(signedIn(200)), (role, m) => send(role, m, '/api/user/profile'));

  // Service accounts (variant A): people create and delete them; a key cannot make more keys.
  add('POST /api/service-accounts', expect_(grant(['orgAdmin', 'globalAdmin'], 201)), (role) =>
    send(role, 'POST', '/api/service-accounts', { json: { organization: 'acme', expirationDays: 30 } }),
  );
  add('GET /api/service-accounts', expect_(grant(['outsider', 'member', 'creator', 'moderator', 'orgAdmin', 'globalAdmin'], 200)), (role, m) =>
    send(role, m, '/api/service-accounts'),
  );
  const doomedAccount = reusable(async () => {
    const created = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } });
    return created.body.id as number;
  });
  add('DELETE /api/service-accounts/:id', expect_(grant(['orgAdmin', 'globalAdmin'], 200)), (role) =>
    doomedAccount((id) => send(role, 'DELETE', `/api/service-accounts/${id}`)),
  );

  // Accounts, part 2 (issue 11): refresh, variant B service accounts, invitations, mail, user administration.
  add('GET /api/auth/refresh-token', expect_(grant(PEOPLE, 200)), async (role, m) => {
    // People refresh a stay-logged-in session of their own made for the purpose; the matrix's tokens are not
    // stay-logged-in sessions (serviceAccountB's: 403), and keys are no sessions (403).
    const token = await freshSession(role, true);
    return token ? send('anonymous', m, '/api/auth/refresh-token', { headers: { 'x-access-token': token } }) : send(role, m, '/api/auth/refresh-token');
  });
  add('POST /api/auth/refreshtoken', all(200), async (role) => {
    const signedIn = await service.request('POST', '/api/auth/signin', { json: { username: 'member', password: USER_PASSWORD } });
    return send(role, 'POST', '/api/auth/refreshtoken', { json: { refreshToken: signedIn.body.refresh_token } });
  });
  add('POST /api/auth/service-account', all(200), (role) =>
    send(role, 'POST', '/api/auth/service-account', { json: { clientId: clientB.client_id, clientSecret: clientB.client_secret } }),
  );
  add('POST /api/admin/service-accounts', expect_(grant(['orgAdmin', 'globalAdmin'], 201)), (role) =>
    send(role, 'POST', '/api/admin/service-accounts', { json: { name: unique('client'), organizationId: acmeId } }),
  );
  add('GET /api/admin/service-accounts', expect_(grant(PEOPLE, 200)), (role, m) => send(role, m, '/api/admin/service-accounts'));
  const doomedClient = reusable(
    async () =>
      (
        await service.request('POST', '/api/admin/service-accounts', {
          token: service.adminToken,
          json: { name: unique('doomed-client'), organizationId: acmeId },
        })
      ).body.id as number,
  );
  add('DELETE /api/admin/service-accounts/:id', expect_(grant(['orgAdmin', 'globalAdmin'], 200)), (role) =>
    doomedClient((id) => send(role, 'DELETE', `/api/admin/service-accounts/${id}`)),
  );
  add('POST /api/auth/invite', expect_(grant(['moderator', 'orgAdmin', 'globalAdmin'], 201)), (role) =>
    send(role, 'POST', '/api/auth/invite', { json: { email: `${unique('invitee')}@example.test`, organizationName: 'acme' } }),
  );
  add('POST /api/mail/test-smtp', expect_(grant(['globalAdmin'], 200)), (role) =>
    send(role, 'POST', '/api/mail/test-smtp', { json: { host: smtp.host, port: smtp.port, to: 'ops@example.test', from: 'setup@example.test' } }),
  );
  add('GET /api/admin/users', expect_(grant(['globalAdmin'], 200)), (role, m) => send(role, m, '/api/admin/users'));
  add('GET /api/admin/users/:username', expect_(grant(['globalAdmin'], 200)), (role, m) => send(role, m, '/api/admin/users/member'));
  add('PATCH /api/admin/users/:username', expect_(grant(['globalAdmin'], 200)), (role) =>
    send(role, 'PATCH', '/api/admin/users/patient', { json: { disabled: false } }),
  );
  const doomedUser = reusable(async () => (await service.createUser(unique('doomed-user'))).username);
  add('DELETE /api/admin/users/:username', expect_(grant(['globalAdmin'], 200)), (role) =>
    doomedUser((user) => send(role, 'DELETE', `/api/admin/users/${user}`)),
  );

  // Organizations and members.
  add('POST /api/organization', expect_(grant(['globalAdmin'], 201)), (role) => send(role, 'POST', '/api/organization', { json: { name: unique('org') } }));
  add('GET /api/organization', everyone(), (role, m) => send(role, m, '/api/organization'));
  add('GET /api/organization/:org', everyone(), (role, m) => send(role, m, '/api/organization/acme'), 'public organization');
  add('GET /api/organization/:org', privateReaders(['member', 'globalAdmin']), (role, m) => send(role, m, '/api/organization/vault'), 'private organization');
  add('PUT /api/organization/:org', expect_(grant(['orgAdmin', 'globalAdmin'], 200)), (role) =>
    send(role, 'PUT', '/api/organization/acme', { json: { email: 'acme@example.test' } }),
  );
  add('PATCH /api/organization/:org', expect_(grant(['orgAdmin', 'globalAdmin'], 200)), (role) =>
    send(role, 'PATCH', '/api/organization/acme', { json: { description: `by ${role}` } }),
  );
  const doomedOrg = reusable(async () => {
    const name = unique('doomed');
    await createOrganization(service, name);
    // Its members hold the same roles as in acme: only a global admin deletes an organization.
    for (const [user, memberRole] of [
      ['member', 'user'],
      ['creator', 'user'],
      ['moderator', 'moderator'],
      ['orgadmin', 'admin'],
    ] as const)
      await addMember(service, name, user, memberRole);
    return name;
  });
  add('DELETE /api/organization/:org', expect_(grant(['globalAdmin'], 200)), (role) => doomedOrg((name) => send(role, 'DELETE', `/api/organization/${name}`)));
  add('GET /api/organization/:org/members', readers(), (role, m) => send(role, m, '/api/organization/acme/members'));
  const newcomer = reusable(async () => (await service.createUser(unique('newbie'))).username);
  add(
    'PUT /api/organization/:org/members/:username',
    expect_(grant(['moderator', 'orgAdmin', 'globalAdmin'], 200)),
    (role) => newcomer((user) => send(role, 'PUT', `/api/organization/acme/members/${user}`, { json: { role: 'user' } })),
    'add a plain user',
  );
  add(
    'PUT /api/organization/:org/members/:username',
    expect_(grant(['orgAdmin', 'globalAdmin'], 200)),
    (role) => newcomer((user) => send(role, 'PUT', `/api/organization/acme/members/${user}`, { json: { role: 'moderator' } })),
    'make a moderator',
  );
  const leaver = reusable(async () => {
    const { username } = await service.createUser(unique('leaver'));
    await addMember(service, 'acme', username, 'user');
    return username;
  });
  add(
    'DELETE /api/organization/:org/members/:username',
    expect_(grant(['moderator', 'orgAdmin', 'globalAdmin'], 200)),
    (role) => leaver((user) => send(role, 'DELETE', `/api/organization/acme/members/${user}`)),
    'remove a plain user',
  );
  add(
    'DELETE /api/organization/:org/members/:username',
    expect_(grant(['orgAdmin', 'globalAdmin'], 200)),
    (role) =>
      send(role, 'DELETE', '/api/organization/acme/members/fellow-moderator').then(async (status) => {
        if (status === 200) await addMember(service, 'acme', 'fellow-moderator', 'moderator');
        return status;
      }),
    'remove a moderator',
  );

  // Boxes and what is in them.
  add('POST /api/organization/:org/box', expect_(grant(MEMBERS, 201)), (role) =>
    send(role, 'POST', '/api/organization/acme/box', { json: { name: unique('box') } }),
  );
  add('GET /api/organization/:org/box', everyone(), (role, m) => send(role, m, '/api/organization/acme/box'), 'public organization');
  add(
    'GET /api/organization/:org/box',
    privateReaders(['member', 'globalAdmin']),
    (role, m) => send(role, m, '/api/organization/vault/box'),
    'private organization',
  );
  read('/api/organization/:org/box/:box', boxUrl);
  change('PUT /api/organization/:org/box/:box', MANAGERS, 200, (p) => [boxUrl(p), { json: { description: 'changed' } }], { upload: false });
  change('PATCH /api/organization/:org/box/:box', MANAGERS, 200, (p) => [boxUrl(p), { json: { description: 'patched' } }], { upload: false });
  change('DELETE /api/organization/:org/box/:box', MANAGERS, 200, (p) => [boxUrl(p)], { upload: false });

  change('POST /api/organization/:org/box/:box/version', MANAGERS, 201, (p) => [`${boxUrl(p)}/version`, { json: { versionNumber: '2.0.0' } }], {
    upload: false,
  });
  read('/api/organization/:org/box/:box/version', (p) => `${boxUrl(p)}/version`);
  read(V, versionUrl);
  change(`PUT ${V}`, MANAGERS, 200, (p) => [versionUrl(p), { json: { description: 'changed' } }], { upload: false });
  change(`PATCH ${V}`, MANAGERS, 200, (p) => [versionUrl(p), { json: { status: 'revoked' } }], { upload: false });
  change(`DELETE ${V}`, MANAGERS, 200, (p) => [versionUrl(p)], { upload: false });

  change(`POST ${V}/provider`, MANAGERS, 201, (p) => [`${versionUrl(p)}/provider`, { json: { name: 'libvirt' } }], { upload: false });
  read(`${V}/provider`, (p) => `${versionUrl(p)}/provider`);
  read(P, providerUrl);
  change(`PUT ${P}`, MANAGERS, 200, (p) => [providerUrl(p), { json: { description: 'changed' } }], { upload: false });
  change(`PATCH ${P}`, MANAGERS, 200, (p) => [providerUrl(p), { json: { description: 'patched' } }], { upload: false });
  change(`DELETE ${P}`, MANAGERS, 200, (p) => [providerUrl(p)], { upload: false });

  change(`POST ${P}/architecture`, MANAGERS, 201, (p) => [`${providerUrl(p)}/architecture`, { json: { name: 'arm64' } }], { upload: false });
  read(`${P}/architecture`, (p) => `${providerUrl(p)}/architecture`);
  read(A, archPath);
  change(`PUT ${A}`, MANAGERS, 200, (p) => [archPath(p), { json: { defaultBox: true } }], { upload: false });
  change(`PATCH ${A}`, MANAGERS, 200, (p) => [archPath(p), { json: { defaultBox: true } }], { upload: false });
  change(`DELETE ${A}`, MANAGERS, 200, (p) => [archPath(p)], { upload: false });

  // The box file: uploads (multipart and raw), its information, links, downloads, removal.
  change(
    `POST ${A}/file`,
    MANAGERS,
    201,
    (p) => {
      const form = new FormData();
      form.append('file', new Blob([boxFile]), 'vagrant.box');
      return [`${archPath(p)}/file`, { body: form }];
    },
    { upload: false },
  );
  change(
    `POST ${A}/file/upload`,
    MANAGERS,
    201,
    (p) => [`${archPath(p)}/file/upload`, { body: boxFile, headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box' } }],
    { upload: false },
  );
  read(`${A}/file`, (p) => `${archPath(p)}/file`);
  change(`DELETE ${A}/file`, MANAGERS, 200, (p) => [`${archPath(p)}/file`]);
  read(`${A}/file/get-download-link`, (p) => `${archPath(p)}/file/get-download-link`, 'POST');
  read(`${A}/file/download`, (p) => `${archPath(p)}/file/download`);
  read('/:org/boxes/:box/versions/:version/providers/:provider/:arch/:file_name', vagrantDownload);

  // What Vagrant reads.
  read('/api/organization/:org/box/:box/metadata', (p) => `${boxUrl(p)}/metadata`);
  read('/api/v2/vagrant/:org/:box', (p) => `/api/v2/vagrant/${p.org}/${p.box}`);
  read('/:org/:box', (p) => `/${p.org}/${p.box}`);

  // The publishing API (issue 29), v1 and v2: the rules above, with Vagrant Cloud's statuses (200 on creation).
  for (const v of ['v1', 'v2'] as const) publishingRows(v, add, read, change);

  // Webhooks (issue 11): global admins only. The target never resolves (.invalid), so nothing is delivered.
  const webhook = { url: 'https://hooks.example.invalid/boxyard', events: ['box.deleted'] };
  const adminOnly = (status: number) => expect_(grant(['globalAdmin'], status));
  const savedWebhook = reusable(async () => {
    const created = await service.request('POST', '/api/admin/webhooks', { token: service.adminToken, json: webhook });
    return created.body.id as number;
  });
  add('POST /api/admin/webhooks', adminOnly(201), (role) => send(role, 'POST', '/api/admin/webhooks', { json: webhook }));
  add('GET /api/admin/webhooks', adminOnly(200), (role, m) => send(role, m, '/api/admin/webhooks'));
  add('GET /api/admin/webhooks/:id', adminOnly(200), (role, m) => savedWebhook((id) => send(role, m, `/api/admin/webhooks/${id}`)));
  add('GET /api/admin/webhooks/:id/deliveries', adminOnly(200), (role, m) => savedWebhook((id) => send(role, m, `/api/admin/webhooks/${id}/deliveries`)));
  add('DELETE /api/admin/webhooks/:id', adminOnly(200), (role) => savedWebhook((id) => send(role, 'DELETE', `/api/admin/webhooks/${id}`)));
  const failedDelivery = reusable(async () => {
    const created = await service.request('POST', '/api/admin/webhooks', { token: service.adminToken, json: webhook });
    const [event] = await service.sql<{ id: string }>(
      `insert into events (type, data, delivered_at) values ('box.deleted', '{"organization": "acme", "box": "gone"}', now()) returning id`,
    );
    const [delivery] = await service.sql<{ id: string }>(
      `insert into webhook_deliveries (webhook_id, event_id, status, attempts, finished_at) values ($1, $2, 'failed', 8, now()) returning id`,
      [created.body.id, event!.id],
    );
    return `/api/admin/webhooks/${created.body.id}/deliveries/${delivery!.id}/redeliver`;
  });
  add('POST /api/admin/webhooks/:id/deliveries/:delivery/redeliver', adminOnly(202), (role) => failedDelivery((url) => send(role, 'POST', url)));

  // Setup, status and limits (issue 11): public information answers every caller (it asks for no credential,
  // like /health); only global admins replace the certificate.
  for (const route of ['/api/status', '/api/health', '/api/rules', '/api/discover', '/api/setup/status'])
    add(`GET ${route}`, all(200), (role, m) => send(role, m, route));
  add('POST /api/setup/upload-ssl', expect_(grant(['globalAdmin'], 200)), (role) => {
    const body = new FormData();
    body.append('cert', new Blob([tlsPair.cert]), 'cert.pem');
    body.append('key', new Blob([tlsPair.key]), 'key.pem');
    return send(role, 'POST', '/api/setup/upload-ssl', { body });
  });

  // The web console (issue 15): pages read with the API's rules (a refusal is an HTML page with the same status);
  // sign-in and sign-out answer 303 to anyone (the form's credentials decide, not the request's).
  add('GET /', everyone(), (role, m) => send(role, m, '/'));
  add('GET /:org', everyone(), (role, m) => send(role, m, '/acme'), 'public organization');
  add('GET /:org', privateReaders(['member', 'globalAdmin']), (role, m) => send(role, m, '/vault'), 'private organization');
  read('/:org/boxes/:box', (p) => `/${p.org}/boxes/${p.box}`);
  add('GET /console/users', expect_(grant(['globalAdmin'], 200)), (role, m) => send(role, m, '/console/users'));
  add('GET /console/webhooks', expect_(grant(['globalAdmin'], 200)), (role, m) => send(role, m, '/console/webhooks'));
  add('GET /console/sign-in', everyone(), (role, m) => send(role, m, '/console/sign-in'));
  add('GET /console/assets/:file', all(200), (role, m) => send(role, m, '/console/assets/console.css'));
  const form = (fields: Record<string, string>): Call => ({
    body: Buffer.from(new URLSearchParams(fields).toString()),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  add('POST /console/sign-in', all(303), (role) => send(role, 'POST', '/console/sign-in', form({ username: 'member', password: USER_PASSWORD })));
  add('POST /console/sign-out', all(303), (role) => send(role, 'POST', '/console/sign-out'));
  add('GET /console/sign-up', everyone(), (role, m) => send(role, m, '/console/sign-up'));
  // The form's fields decide (here a username no account may have: the page again, 422), not the caller.
  add('POST /console/sign-up', all(422), (role) =>
    send(role, 'POST', '/console/sign-up', form({ username: 'no spaces allowed', email: 'x@example.test', password: USER_PASSWORD })),
  );
  return rows;
}

type Add = (route: string, expected: Partial<Record<Role, number>>, call: MatrixRow<Role>['call'], name?: string) => void;
type Read = (route: string, url: (p: BoxPath) => string, method?: string, ok?: number) => void;
type Change = (route: string, granted: Role[], status: number, request: (p: BoxPath) => [string, Call?], options?: { upload?: boolean }) => void;

/** Rows of the Vagrant Cloud API `v` (cloud-api/): fixtures are boxes made through the main API, as in rows(). */
function publishingRows(v: 'v1' | 'v2', add: Add, read: Read, change: Change): void {
  const C = `/api/${v}`;
  const archSegment = (p: BoxPath) => (v === 'v2' ? `/${p.arch}` : '');
  const B = `${C}/box/:org/:box`;
  const V = `${B}/version/:version`;
  const P = `${V}/provider/:provider${v === 'v2' ? '/:arch' : ''}`;
  const box = (p: BoxPath) => `${C}/box/${p.org}/${p.box}`;
  const version = (p: BoxPath) => `${box(p)}/version/${p.version}`;
  const provider = (p: BoxPath) => `${version(p)}/provider/${p.provider}${archSegment(p)}`;
  const creator = () => headers.creator['x-access-token']!;
  add(`GET ${C}/authenticate`, expect_(signedIn(200)), (role, m) => send(role, m, `${C}/authenticate`));
  add(`DELETE ${C}/authenticate`, expect_(signedIn(204)), (role, m) => send(role, m, `${C}/authenticate`));
  add(`GET ${C}/user/:org`, everyone(), (role, m) => send(role, m, `${C}/user/acme`), 'public organization');
  add(`GET ${C}/user/:org`, privateReaders(['member', 'globalAdmin']), (role, m) => send(role, m, `${C}/user/vault`), 'private organization');
  add(`POST ${C}/boxes`, expect_(grant(MEMBERS, 200)), (role) =>
    send(role, 'POST', `${C}/boxes`, { json: { box: { username: 'acme', name: unique('cloud') } } }),
  );
  add(`GET ${C}/search`, everyone(), (role, m) => send(role, m, `${C}/search?q=pub`));
  read(B, box);
  change(`PUT ${B}`, MANAGERS, 200, (p) => [box(p), { json: { short_description: 'changed' } }], { upload: false });
  change(`DELETE ${B}`, MANAGERS, 200, (p) => [box(p)], { upload: false });
  change(`POST ${B}/versions`, MANAGERS, 200, (p) => [`${box(p)}/versions`, { json: { version: { version: '2.0.0' } } }], { upload: false });
  read(V, version);
  change(`PUT ${V}`, MANAGERS, 200, (p) => [version(p), { json: { version: { description: 'changed' } } }], { upload: false });
  change(`DELETE ${V}`, MANAGERS, 200, (p) => [version(p)], { upload: false });
  // Releasing needs an unreleased version with a file; non-members do not see unreleased versions (404).
  const unreleased = reusable(async () => {
    const p = await freshBox({ isPublic: true });
    await service.request('PATCH', versionUrl(p), { token: service.adminToken, json: { status: 'unreleased' } });
    return p;
  });
  add(`PUT ${V}/release`, { ...expect_(grant(MANAGERS, 200)), anonymous: 404, outsider: 404, foreignServiceAccount: 404 }, (role) =>
    unreleased((p) => send(role, 'PUT', `${version(p)}/release`)),
  );
  change(`PUT ${V}/revoke`, MANAGERS, 200, (p) => [`${version(p)}/revoke`]);
  change(`POST ${V}/providers`, MANAGERS, 200, (p) => [`${version(p)}/providers`, { json: { provider: { name: 'libvirt', architecture: 'amd64' } } }], {
    upload: false,
  });
  read(P, provider);
  change(`PUT ${P}`, MANAGERS, 200, (p) => [provider(p), { json: { provider: {} } }], { upload: false });
  change(`DELETE ${P}`, MANAGERS, 200, (p) => [provider(p)], { upload: false });
  // Handing out upload URLs changes no box: one file-less box serves every role.
  let bare: Promise<BoxPath> | undefined;
  const bareBox = () => (bare ??= freshBox({ isPublic: true, upload: false }));
  for (const direct of ['', '/direct'])
    add(`GET ${P}/upload${direct}`, expect_(grant(MANAGERS, 200)), async (role, m) => send(role, m, `${provider(await bareBox())}/upload${direct}`));
  // The upload URL is the capability: any caller holding it uploads (a credential that no longer works: 401).
  const uploadUrl = reusable(async () => {
    const granted = await service.request('GET', `${provider(await freshBox({ isPublic: true, upload: false }))}/upload`, { token: creator() });
    return new URL(granted.body.upload_path as string).pathname;
  });
  add(`PUT ${C}/uploads/:token`, everyone(), (role) =>
    uploadUrl((url) => send(role, 'PUT', url, { body: boxFile, headers: { 'content-type': 'application/octet-stream' } })),
  );
  // The callback takes the caller's token: those who may change the box.
  const callback = reusable(async () => {
    const granted = await service.request('GET', `${provider(await freshBox({ isPublic: true, upload: false }))}/upload/direct`, { token: creator() });
    const sent = await fetch(granted.body.upload_path as string, { method: 'PUT', body: boxFile });
    if (sent.status !== 200) throw new Error(`direct upload: ${sent.status}`);
    return new URL(granted.body.callback as string).pathname;
  });
  add(`PUT ${C}/uploads/:token/callback`, expect_(grant(MANAGERS, 200)), (role) => callback((url) => send(role, 'PUT', url)));
}

/** A new session of a person (stay-logged-in if asked) or of the variant B account; undefined for the other roles. */
async function freshSession(role: Role, stayLoggedIn = false): Promise<string | undefined> {
  if (role === 'serviceAccountB') {
    if (stayLoggedIn) return undefined;
    return (await service.request('POST', '/api/auth/service-account', { json: { clientId: clientB.client_id, clientSecret: clientB.client_secret } })).body
      .access_token as string;
  }
  const username = role === 'globalAdmin' ? 'admin' : USERS[role];
  if (!username) return undefined;
  const signedIn = await service.request('POST', '/api/auth/signin', {
    json: { username, password: username === 'admin' ? ADMIN_PASSWORD : USER_PASSWORD, stayLoggedIn },
  });
  return signedIn.body.access_token as string;
}

beforeAll(async () => {
  smtp = await startTestSmtpServer();
  service = await startTestService({ storage: 's3' });
  boxFile = await makeBox();
  const pems = await generate([{ name: 'commonName', value: 'matrix.test' }], { keySize: 2048, algorithm: 'sha256' });
  tlsPair = { cert: pems.cert, key: pems.private };
  await createOrganization(service, 'acme');
  await createOrganization(service, 'other');
  await createOrganization(service, 'vault', { isPublic: false });
  // The global admin created them (and became their admin): leave acme and vault so only the global role counts.
  for (const org of ['acme', 'vault'])
    expect((await service.request('DELETE', `/api/organization/${org}/members/admin`, { token: service.adminToken })).status).toBe(200);
  headers.anonymous = {};
  headers.globalAdmin = { 'x-access-token': service.adminToken };
  const memberships: [Role, string, 'user' | 'moderator' | 'admin'][] = [
    ['outsider', 'other', 'user'],
    ['member', 'acme', 'user'],
    ['member', 'vault', 'user'],
    ['creator', 'acme', 'user'],
    ['moderator', 'acme', 'moderator'],
    ['orgAdmin', 'acme', 'admin'],
  ];
  for (const [role, username] of Object.entries(USERS) as [Role, string][]) headers[role] = { 'x-access-token': (await service.createUser(username)).token };
  for (const [role, org, memberRole] of memberships) await addMember(service, org, USERS[role]!, memberRole);
  await service.createUser('fellow-moderator');
  await addMember(service, 'acme', 'fellow-moderator', 'moderator');

  const key = async (org: string, role: 'user' | 'moderator' = 'user') => {
    const created = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: org, role } });
    expect(created.status).toBe(201);
    return { id: created.body.id as number, authorization: `Bearer ${created.body.token}` };
  };
  headers.serviceAccount = { authorization: (await key('acme')).authorization };
  headers.moderatorServiceAccount = { authorization: (await key('acme', 'moderator')).authorization };
  headers.foreignServiceAccount = { authorization: (await key('other')).authorization };
  const expiring = await key('acme', 'moderator');
  await service.sql(`update service_accounts set expires_at = now() - interval '1 hour' where id = $1`, [expiring.id]);
  headers.expiredKey = { authorization: expiring.authorization };
  const deleted = await key('acme', 'moderator');
  expect((await service.request('DELETE', `/api/service-accounts/${deleted.id}`, { token: service.adminToken })).status).toBe(200);
  headers.deletedKey = { authorization: deleted.authorization };
  acmeId = (await service.request('GET', '/api/organization/acme', { token: service.adminToken })).body.id as number;
  const client = await service.request('POST', '/api/admin/service-accounts', {
    token: service.adminToken,
    json: { name: 'matrix-client', organizationId: acmeId },
  });
  expect(client.status).toBe(201);
  clientB = client.body;
  headers.serviceAccountB = { 'x-access-token': (await freshSession('serviceAccountB'))! };
  await service.createUser('patient');
  // A moderator's session that expired an hour ago, signed with the service's own key; and one signed out.
  const moderatorId = (await service.request('GET', '/api/user', { headers: headers.moderator })).body.id as string;
  headers.expiredSession = { 'x-access-token': (await service.running.ctx.tokens.sign(moderatorId, {}, -3600)).token };
  const signedOut = await service.signIn('moderator', USER_PASSWORD);
  expect((await service.request('POST', '/api/auth/signout', { token: signedOut })).status).toBe(200);
  headers.signedOutSession = { 'x-access-token': signedOut };

  publicBox = await freshBox({ isPublic: true });
  privateBox = await freshBox({ isPublic: false });
  await createBoxPath(
    service,
    headers.member['x-access-token']!,
    { org: 'vault', box: 'inside', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' },
    { isPublic: true },
  );
});
afterAll(async () => {
  await service?.close();
  await smtp?.close();
});

describeAccessMatrix<Role>({
  service: 'box-repository',
  roles: ROLES,
  routeTable: () => service?.running.app.routeTable ?? [],
  rows,
});

describe('what the status alone does not show', () => {
  const call = (role: Role, method: string, path: string, json?: unknown) =>
    service.request(method, path, { headers: headers[role], ...(json !== undefined ? { json } : {}) });

  it('lists show private boxes to members only', async () => {
    for (const { name: role } of ROLES.filter((r) => !r.notImplemented && !INVALID.includes(r.name))) {
      const list = await call(role, 'GET', '/api/organization/acme/box?per_page=100');
      expect(list.status).toBe(200);
      const names = (list.body as { name: string }[]).map((b) => b.name);
      expect(names).toContain(publicBox.box);
      expect(names.includes(privateBox.box), role).toBe(MEMBERS.includes(role));
    }
  });

  it('the organization list hides private organizations from non-members', async () => {
    const visible = async (role: Role) => ((await call(role, 'GET', '/api/organization?per_page=100')).body as { name: string }[]).map((o) => o.name);
    expect(await visible('anonymous')).not.toContain('vault');
    expect(await visible('outsider')).not.toContain('vault');
    expect(await visible('member')).toContain('vault');
    expect(await visible('globalAdmin')).toContain('vault');
    // And what is inside a private organization stays inside, even a box marked public.
    for (const url of ['/api/organization/vault/box/inside', '/vault/inside']) {
      expect((await call('anonymous', 'GET', url)).status, url).toBe(401);
      expect((await call('outsider', 'GET', url)).status, url).toBe(404); // as if missing (existence hidden)
      expect((await call('member', 'GET', url)).status, url).toBe(200);
    }
  });

  it('who is calling: roles and organizations of users and keys', async () => {
    const profile = await call('moderator', 'GET', '/api/user/profile');
    expect(profile.body).toMatchObject({
      username: 'moderator',
      roles: ['user'],
      organization: 'acme',
      organizations: expect.arrayContaining([{ name: 'acme', role: 'moderator' }]),
    });
    const robot = await call('serviceAccount', 'GET', '/api/user');
    expect(robot.body).toMatchObject({ roles: ['service_account'], organization: 'acme' });
  });

  it('service-account keys are never shown again, and each user sees only the accounts they may manage', async () => {
    const own = await call('orgAdmin', 'GET', '/api/service-accounts');
    expect(own.body.length).toBeGreaterThan(0);
    expect(JSON.stringify(own.body)).not.toContain('bxy_sa_');
    expect((await call('member', 'GET', '/api/service-accounts')).body).toEqual([]);
  });

  it('a service account manages the boxes it created, in its organization only', async () => {
    const key = headers.serviceAccount;
    expect((await service.request('POST', '/api/organization/acme/box', { headers: key, json: { name: 'by-robot' } })).status).toBe(201);
    expect((await service.request('POST', '/api/organization/acme/box/by-robot/version', { headers: key, json: { version_number: '0.1.0' } })).status).toBe(
      201,
    );
    expect((await service.request('PATCH', '/api/organization/acme/box/by-robot', { headers: key, json: { description: 'mine' } })).status).toBe(200);
    // The member who did not create it can't; the service account can't act in another organization.
    expect((await call('member', 'PATCH', '/api/organization/acme/box/by-robot', { description: 'not mine' })).status).toBe(403);
    expect((await service.request('POST', '/api/organization/other/box', { headers: key, json: { name: 'elsewhere' } })).status).toBe(403);
  });

  it('a moderator may not remove another moderator, and a refused change leaves the box as it was', async () => {
    expect((await call('moderator', 'DELETE', '/api/organization/acme/members/fellow-moderator')).status).toBe(403);
    expect((await call('member', 'DELETE', boxUrl(publicBox))).status).toBe(403);
    expect((await call('anonymous', 'GET', boxUrl(publicBox))).status).toBe(200);
  });

  it('credentials that no longer work say why', async () => {
    const deleted = await call('deletedKey', 'GET', '/api/user');
    expect(deleted.status).toBe(401);
    expect(deleted.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await call('signedOutSession', 'GET', '/api/user')).body.detail).toContain('revoked');
    expect((await call('expiredSession', 'GET', '/api/user')).body.detail).toContain('expired');
    expect((await call('expiredKey', 'GET', '/api/user')).body.detail).toContain('expired');
  });
});
