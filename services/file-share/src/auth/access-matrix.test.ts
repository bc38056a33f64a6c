// The file share's access matrix: every route of the running app × every role, each cell a real request on the
// run's PostgreSQL and MinIO. Roles: anonymous; a user signed in by cookie, another user by Basic, an admin by a
// Bearer session; one API key per permission (made by the admin, so only the key limits it) and one holding all
// three but scoped to /team; and credentials that no longer work: an expired and a signed-out session, an
// expired and a revoked key. The share has no organizations and no service accounts: keys are its machine
// credentials. The one catch-all route serves listings, downloads, uploads, folders, search, renames and
// deletions: it has one case per operation. (auth/access.test.ts keeps the escalation cases: keys minting keys.)
import { createSessionTokens } from '@boxyard/kit';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { describeAccessMatrix, outcomes, reusable, type MatrixRow, type RoleSpec } from '@boxyard/test/harness/access-matrix.ts';
import { operationalRows } from '@boxyard/test/harness/operational-rows.ts';
import { ADMIN_PASSWORD, adminAuth, createKey, createUser, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

type Role =
  | 'anonymous'
  | 'userCookie'
  | 'otherUserBasic'
  | 'adminSession'
  | 'keyDownloads'
  | 'keyUploads'
  | 'keyDelete'
  | 'keyScopedTeam'
  | 'expiredSession'
  | 'signedOutSession'
  | 'expiredKey'
  | 'revokedKey';

const ROLES: RoleSpec<Role>[] = [
  { name: 'anonymous' },
  { name: 'userCookie' },
  { name: 'otherUserBasic' },
  { name: 'adminSession' },
  { name: 'keyDownloads' },
  { name: 'keyUploads' },
  { name: 'keyDelete' },
  { name: 'keyScopedTeam' },
  { name: 'expiredSession' },
  { name: 'signedOutSession' },
  { name: 'expiredKey' },
  { name: 'revokedKey' },
];
/** Credentials that are present but no longer work: 401 on every route behind authentication. */
const INVALID: Role[] = ['expiredSession', 'signedOutSession', 'expiredKey', 'revokedKey'];
const UNAUTHENTICATED: Role[] = ['anonymous', ...INVALID];
const USERS: Role[] = ['userCookie', 'otherUserBasic', 'adminSession'];
const KEYS: Role[] = ['keyDownloads', 'keyUploads', 'keyDelete', 'keyScopedTeam'];

const grant = (roles: Role[], status: number) => Object.fromEntries(roles.map((role) => [role, status])) as Partial<Record<Role, number>>;
const expect_ = (granted: Partial<Record<Role, number>>, otherwise = 403) => outcomes(ROLES, UNAUTHENTICATED, granted, otherwise);
/** Routes behind authentication that need no right: the invalid credentials get 401, everyone else `status`. */
const open = (status: number) => expect_(grant(['anonymous', ...USERS, ...KEYS], status));

let test: TestShare;
const headers = {} as Record<Role, Record<string, string>>;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}`;
let userKeyId: () => Promise<string>;

async function send(
  role: Role,
  method: string,
  path: string,
  options: { json?: unknown; body?: FormData | string; headers?: Record<string, string> } = {},
): Promise<number> {
  const sent: Record<string, string> = { ...headers[role], ...options.headers };
  let body: string | FormData | undefined = options.body;
  if (options.json !== undefined) {
    sent['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const aborter = new AbortController();
  const response = await fetch(`${test.url}${path}`, {
    method,
    headers: sent,
    ...(body !== undefined ? { body } : {}),
    redirect: 'manual',
    signal: aborter.signal,
  });
  // An event stream never ends by itself: its status is the answer.
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) aborter.abort();
  else await response.arrayBuffer();
  return response.status;
}

const form = (content: string, filename = 'file.txt') => {
  const data = new FormData();
  data.append('file', new Blob([content]), filename);
  return data;
};

/** A fresh file under /team, uploaded by the admin. */
const teamFile = async () => {
  const path = `/team/${unique('file')}.txt`;
  const response = await upload(test.url, path, 'content', adminAuth);
  if (response.status !== 201) throw new Error(`upload ${path}: ${response.status}`);
  return path;
};

function rows(): MatrixRow<Role>[] {
  const rows: MatrixRow<Role>[] = operationalRows(ROLES, (role, method, path) => send(role, method, path));
  const add = (route: string, expected: Partial<Record<Role, number>>, call: MatrixRow<Role>['call'], name?: string) =>
    rows.push({ route, expected, call, ...(name ? { name } : {}) });
  const readers = (status = 200, scoped = false) => expect_(grant([...USERS, 'keyDownloads', ...(scoped ? ['keyScopedTeam' as const] : [])], status));
  const writers = (status: number) => expect_(grant([...USERS, 'keyUploads', 'keyScopedTeam'], status));
  const deleters = (status: number) => expect_(grant(['adminSession', 'keyDelete', 'keyScopedTeam'], status));

  // Signing in and out.
  add('GET /auth/methods', open(200), (role, m) => send(role, m, '/auth/methods'));
  add('POST /auth/login/basic', open(200), (role) => send(role, 'POST', '/auth/login/basic', { json: { username: 'alice', password: alicePassword } }));
  // Signing out ends the session sent with it; each session role ends one made for the purpose, not the matrix's.
  add('POST /auth/logout', open(200), async (role) => {
    if (role === 'userCookie')
      return send('anonymous', 'POST', '/auth/logout', { headers: { cookie: `auth_token=${await sessionOf('alice', alicePassword)}` } });
    if (role === 'adminSession')
      return send('anonymous', 'POST', '/auth/logout', { headers: { authorization: `Bearer ${await sessionOf('admin', ADMIN_PASSWORD)}` } });
    return send(role, 'POST', '/auth/logout');
  });

  // The web console (issue 15). Its assets and the sign-in form need no credentials, and a stale one does not
  // block them; signing out ends the session sent (each session role ends one made for the purpose).
  const everyone = (status: number) => Object.fromEntries(ROLES.map((role) => [role.name, status])) as Partial<Record<Role, number>>;
  add('GET /-/assets/:file', everyone(200), (role, m) => send(role, m, '/-/assets/files.js'));
  add('GET /-/sign-in', everyone(200), (role, m) => send(role, m, '/-/sign-in?return_to=%2Fdocs%2F'));
  add('POST /-/sign-in', everyone(303), (role) =>
    send(role, 'POST', '/-/sign-in', {
      body: new URLSearchParams({ username: 'alice', password: alicePassword, return_to: '/docs/' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
  );
  add('POST /-/sign-out', open(303), async (role) => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    if (role === 'userCookie')
      return send('anonymous', 'POST', '/-/sign-out', { body: '', headers: { ...form, cookie: `auth_token=${await sessionOf('alice', alicePassword)}` } });
    if (role === 'adminSession')
      return send('anonymous', 'POST', '/-/sign-out', { body: '', headers: { ...form, authorization: `Bearer ${await sessionOf('admin', ADMIN_PASSWORD)}` } });
    return send(role, 'POST', '/-/sign-out', { body: '', headers: form });
  });
  // The keys page is for people signed in as themselves; a key gets 403, nobody a 401 challenge for Basic.
  add('GET /-/keys', expect_(grant(USERS, 200)), (role, m) => send(role, m, '/-/keys', { headers: { accept: 'text/html' } }));

  // Users: administrators only, signed in as themselves (never with a key).
  add('GET /api/users', expect_(grant(['adminSession'], 200)), (role, m) => send(role, m, '/api/users'));
  add('POST /api/users', expect_(grant(['adminSession'], 201)), (role) =>
    send(role, 'POST', '/api/users', { json: { username: unique('made').replace('-', ''), password: `Pw-${unique('x')}-9aA-long`, role: 'user' } }),
  );

  // API keys: users manage theirs; a key may mint narrower keys of its own lineage; admins see every key.
  add('GET /api/api-keys', expect_(grant([...USERS, ...KEYS], 200)), (role, m) => send(role, m, '/api/api-keys'));
  // A key's child inherits its scope: the scoped key mints a downloads key inside /team.
  add('POST /api/api-keys', expect_(grant([...USERS, 'keyDownloads', 'keyScopedTeam'], 201)), (role) =>
    send(role, 'POST', '/api/api-keys', { json: { name: unique('key'), permissions: ['downloads'] } }),
  );
  add('PUT /api/api-keys/:id', expect_({ ...grant(['userCookie', 'adminSession'], 200), otherUserBasic: 404 }), async (role) =>
    send(role, 'PUT', `/api/api-keys/${await userKeyId()}`, { json: { name: unique('renamed') } }),
  );
  const doomedKey = reusable(() => createKey(test.url, alice.authorization, { name: unique('doomed'), permissions: ['downloads'] }).then((key) => key.id));
  add('DELETE /api/api-keys/:id', expect_({ ...grant(['userCookie', 'adminSession'], 200), ...grant(['otherUserBasic', ...KEYS], 404) }), (role) =>
    doomedKey((id) => send(role, 'DELETE', `/api/api-keys/${id}`)),
  );

  // Live events: anyone who may read (a scoped key reads its folder's events).
  add('GET /events', readers(200, true), (role, m) => send(role, m, '/events'));

  // The share's own paths.
  add('GET /*', readers(), (role, m) => send(role, m, '/', { headers: { accept: 'text/html' } }), 'the root listing as a page');
  add('GET /*', readers(), (role, m) => send(role, m, '/docs/', { headers: { accept: 'application/json' } }), 'a folder listing as JSON');
  add('GET /*', readers(), (role, m) => send(role, m, '/docs/readme.txt'), 'a download');
  add('GET /*', readers(200, true), (role, m) => send(role, m, '/team/plan.txt'), "a download inside the scoped key's folder");
  add('POST /*', writers(201), (role) => send(role, 'POST', `/team/${unique('new')}.txt`, { body: form('new') }), 'an upload of a new file');
  add(
    'POST /*',
    writers(201),
    (role) => send(role, 'POST', `/team/${unique('raw')}.txt`, { body: 'raw bytes', headers: { 'content-type': 'application/octet-stream' } }),
    "an upload of a new file as the body (the console's)",
  );
  const replaced = reusable(teamFile);
  add(
    'POST /*',
    expect_(grant(['adminSession', 'keyScopedTeam'], 200)),
    (role) => replaced((path) => send(role, 'POST', path, { body: form('replaced') })),
    'an upload replacing a file (needs delete)',
  );
  add('POST /*', writers(201), (role) => send(role, 'POST', '/team/folders', { json: { folderName: unique('folder') } }), 'a new folder');
  add('POST /*', readers(200, true), (role) => send(role, 'POST', '/team/search', { json: { query: 'plan' } }), 'a search');
  const renamed = reusable(teamFile);
  // Renaming a file away frees its path like deleting it: it needs delete as well as uploads.
  add(
    'PUT /*',
    expect_(grant(['adminSession', 'keyScopedTeam'], 200)),
    (role) => renamed((path) => send(role, 'PUT', `${path}?action=rename`, { json: { newName: `${unique('renamed')}.txt` } })),
    'a rename (needs uploads and delete)',
  );
  const deleted = reusable(teamFile);
  add('DELETE /*', deleters(200), (role) => deleted((path) => send(role, 'DELETE', path)), 'a deletion');

  // Share links and file requests (issue 30): made by whoever holds on the path the permission they delegate
  // (downloads for a share link, uploads for a request); seen and revoked by their creator (a key: the links made
  // with it) and admins; the public pages are the same for every caller (a link's Basic password is no account's).
  add(
    'POST /api/shares',
    expect_(grant([...USERS, 'keyDownloads', 'keyScopedTeam'], 201)),
    (role) => send(role, 'POST', '/api/shares', { json: { path: '/team' } }),
    'a share link (delegates downloads)',
  );
  add(
    'POST /api/shares',
    expect_(grant([...USERS, 'keyUploads', 'keyScopedTeam'], 201)),
    (role) => send(role, 'POST', '/api/shares', { json: { path: '/team', kind: 'request' } }),
    'a file request (delegates uploads)',
  );
  add('GET /api/shares', expect_(grant([...USERS, ...KEYS], 200)), (role, m) => send(role, m, '/api/shares'));
  const alicesLink = async () => {
    const response = await fetch(`${test.url}/api/shares`, {
      method: 'POST',
      headers: { authorization: alice.authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ path: '/docs' }),
    });
    return ((await response.json()) as { data: { share: { id: string } } }).data.share.id;
  };
  const owned = { ...grant(['userCookie', 'adminSession'], 200), ...grant(['otherUserBasic', ...KEYS], 404) };
  add('GET /api/shares/:id', expect_(owned), async (role, m) => send(role, m, `/api/shares/${await (linkId ??= alicesLink())}`));
  const doomedLink = reusable(alicesLink);
  add('DELETE /api/shares/:id', expect_(owned), (role) => doomedLink((id) => send(role, 'DELETE', `/api/shares/${id}`)));
  add('GET /-/shares', expect_(grant(USERS, 200)), (role, m) => send(role, m, '/-/shares', { headers: { accept: 'text/html' } }));
  const publicLink = (kind: 'share' | 'request') => async () => {
    const response = await fetch(`${test.url}/api/shares`, {
      method: 'POST',
      headers: { authorization: adminAuth, 'content-type': 'application/json' },
      body: JSON.stringify({ path: '/docs', kind }),
    });
    return new URL(((await response.json()) as { data: { share: { url: string } } }).data.share.url).pathname.split('/')[3]!;
  };
  const shareToken = () => (shareLink ??= publicLink('share')());
  const requestToken = () => (requestLink ??= publicLink('request')());
  add('GET /-/s/:token', everyone(301), async (role, m) => send(role, m, `/-/s/${await shareToken()}`), 'a shared folder without its slash');
  add('GET /-/s/:token/*', everyone(200), async (role, m) => send(role, m, `/-/s/${await shareToken()}/readme.txt`), 'a download through a share link');
  add(
    'POST /-/s/:token',
    everyone(201),
    async (role) => send(role, 'POST', `/-/s/${await requestToken()}`, { body: form('sent', `${unique('sent')}.txt`) }),
    'an upload into a file request',
  );
  add(
    'POST /-/s/:token/*',
    everyone(201),
    async (role) =>
      send(role, 'POST', `/-/s/${await requestToken()}/${unique('raw')}.txt`, { body: 'raw', headers: { 'content-type': 'application/octet-stream' } }),
    'a raw upload through a file request',
  );
  add('GET /-/zip/:token', everyone(200), async (role, m) => send(role, m, `/-/zip/${await shareToken()}`));
  add('GET /-/zip/:token/*', everyone(200), async (role, m) => send(role, m, `/-/zip/${await shareToken()}/`));
  // Resumable uploads (tus): created by whoever may upload there; only its creator continues or ends it, others
  // are told it does not exist (404); OPTIONS needs no right.
  const TUS = { 'tus-resumable': '1.0.0' };
  const tusWriters = (status: number) => expect_({ ...grant([...USERS, 'keyUploads', 'keyScopedTeam'], status), ...grant(['keyDownloads', 'keyDelete'], 404) });
  const create = async (role: Role, length = 1): Promise<string> => {
    const may = [...USERS, 'keyUploads', 'keyScopedTeam'].includes(role);
    const creator = may ? headers[role] : { authorization: adminAuth };
    const response = await fetch(`${test.url}/api/uploads`, {
      method: 'POST',
      headers: {
        ...creator,
        ...TUS,
        'upload-length': String(length),
        'upload-metadata': `path ${Buffer.from(`/team/${unique('tus')}.bin`).toString('base64')}`,
      },
    });
    if (response.status !== 201) throw new Error(`tus creation: ${response.status}`);
    return response.headers.get('location')!;
  };
  const chunk = { ...TUS, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' };
  add('OPTIONS /api/uploads', open(204), (role) => send(role, 'OPTIONS', '/api/uploads'));
  add('OPTIONS /api/uploads/:id', open(204), async (role) => send(role, 'OPTIONS', await create('adminSession')));
  add('POST /api/uploads', writers(201), (role) =>
    send(role, 'POST', '/api/uploads', {
      headers: { ...TUS, 'upload-length': '1', 'upload-metadata': `path ${Buffer.from(`/team/${unique('tus')}.bin`).toString('base64')}` },
    }),
  );
  add('HEAD /api/uploads/:id', tusWriters(200), async (role) => send(role, 'HEAD', await create(role), { headers: TUS }));
  add('PATCH /api/uploads/:id', tusWriters(204), async (role) => send(role, 'PATCH', await create(role), { body: 'x', headers: chunk }));
  add(
    'POST /api/uploads/:id',
    tusWriters(204),
    async (role) => send(role, 'POST', await create(role), { body: 'x', headers: { ...chunk, 'x-http-method-override': 'PATCH' } }),
    'a PATCH by X-HTTP-Method-Override',
  );
  add('DELETE /api/uploads/:id', tusWriters(204), async (role) => send(role, 'DELETE', await create(role), { headers: TUS }));
  // Resumable uploads through a file request: the link decides, the same for every caller (credentials are ignored).
  const linkUpload = async (): Promise<string> => {
    const metadata = `filename ${Buffer.from(`${unique('ltus')}.bin`).toString('base64')}`;
    const response = await fetch(`${test.url}/-/tus/${await requestToken()}`, {
      method: 'POST',
      headers: { ...TUS, 'upload-length': '1', 'upload-metadata': metadata },
    });
    if (response.status !== 201) throw new Error(`tus creation through a link: ${response.status}`);
    return response.headers.get('location')!;
  };
  add('OPTIONS /-/tus/:token', everyone(204), async (role) => send(role, 'OPTIONS', `/-/tus/${await requestToken()}`));
  add('OPTIONS /-/tus/:token/:id', everyone(204), async (role) => send(role, 'OPTIONS', await linkUpload()));
  add('POST /-/tus/:token', everyone(201), async (role) =>
    send(role, 'POST', `/-/tus/${await requestToken()}`, {
      headers: { ...TUS, 'upload-length': '1', 'upload-metadata': `filename ${Buffer.from(`${unique('ltus')}.bin`).toString('base64')}` },
    }),
  );
  add('HEAD /-/tus/:token/:id', everyone(200), async (role) => send(role, 'HEAD', await linkUpload(), { headers: TUS }));
  add('PATCH /-/tus/:token/:id', everyone(204), async (role) => send(role, 'PATCH', await linkUpload(), { body: 'x', headers: chunk }));
  add(
    'POST /-/tus/:token/:id',
    everyone(204),
    async (role) => send(role, 'POST', await linkUpload(), { body: 'x', headers: { ...chunk, 'x-http-method-override': 'PATCH' } }),
    'a PATCH by X-HTTP-Method-Override',
  );
  add('DELETE /-/tus/:token/:id', everyone(204), async (role) => send(role, 'DELETE', await linkUpload(), { headers: TUS }));
  return rows;
}

let alice: { authorization: string; password: string };
let alicePassword: string;
let linkId: Promise<string> | undefined;
let shareLink: Promise<string> | undefined;
let requestLink: Promise<string> | undefined;

async function sessionOf(username: string, password: string): Promise<string> {
  const response = await fetch(`${test.url}/auth/login/basic`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (response.status !== 200) throw new Error(`login ${username}: ${response.status}`);
  return ((await response.json()) as { data: { token: string } }).data.token;
}

beforeAll(async () => {
  test = await startTestShare({ storage: 's3' });
  alice = await createUser(test.url, 'alice', 'user');
  alicePassword = alice.password;
  const bob = await createUser(test.url, 'bob', 'user');
  for (const path of ['/docs/readme.txt', '/team/plan.txt'])
    if ((await upload(test.url, path, 'content', adminAuth)).status !== 201) throw new Error(`upload ${path}`);

  headers.anonymous = {};
  headers.userCookie = { cookie: `auth_token=${await sessionOf('alice', alice.password)}` };
  headers.otherUserBasic = { authorization: bob.authorization };
  headers.adminSession = { authorization: `Bearer ${await sessionOf('admin', ADMIN_PASSWORD)}` };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  headers.keyDownloads = bearer((await createKey(test.url, adminAuth, { name: 'downloads', permissions: ['downloads'] })).token);
  headers.keyUploads = bearer((await createKey(test.url, adminAuth, { name: 'uploads', permissions: ['uploads'] })).token);
  headers.keyDelete = bearer((await createKey(test.url, adminAuth, { name: 'delete', permissions: ['delete'] })).token);
  headers.keyScopedTeam = bearer(
    (await createKey(test.url, adminAuth, { name: 'team', permissions: ['downloads', 'uploads', 'delete'], scope: '/team' })).token,
  );

  const expiring = await createKey(test.url, adminAuth, { name: 'expiring', permissions: ['downloads', 'uploads', 'delete'] });
  const db = new pg.Client({ connectionString: test.databaseUrl });
  await db.connect();
  try {
    await db.query(`update ${test.config.database.schema}.api_keys set expires_at = now() - interval '1 hour' where id = $1`, [expiring.id]);
  } finally {
    await db.end();
  }
  headers.expiredKey = bearer(expiring.token);
  const revoked = await createKey(test.url, adminAuth, { name: 'revoked', permissions: ['downloads', 'uploads', 'delete'] });
  if ((await fetch(`${test.url}/api/api-keys/${revoked.id}`, { method: 'DELETE', headers: { authorization: adminAuth } })).status !== 200)
    throw new Error('revoke');
  headers.revokedKey = bearer(revoked.token);

  // The admin's session, expired an hour ago (signed with the share's own key), and one signed out.
  const tokens = createSessionTokens({
    secrets: [test.config.session.secret],
    issuer: test.config.session.issuer,
    audience: test.config.session.audience,
    typ: 'boxyard-file-share-session+jwt',
    ttlSeconds: test.config.session.ttl_seconds,
  });
  const adminId = (
    (await (await fetch(`${test.url}/api/users`, { headers: { authorization: adminAuth } })).json()) as { data: { users: { id: string; username: string }[] } }
  ).data.users.find((u) => u.username === 'admin')!.id;
  headers.expiredSession = bearer((await tokens.sign(adminId, {}, -3600)).token);
  const signedOut = await sessionOf('admin', ADMIN_PASSWORD);
  if ((await fetch(`${test.url}/auth/logout`, { method: 'POST', headers: bearer(signedOut) })).status !== 200) throw new Error('logout');
  headers.signedOutSession = bearer(signedOut);

  const aliceKey = createKey(test.url, alice.authorization, { name: 'alice', permissions: ['downloads'] }).then((key) => key.id);
  userKeyId = () => aliceKey;
});
afterAll(() => test?.close());

describeAccessMatrix<Role>({
  service: 'file-share',
  roles: ROLES,
  routeTable: () => test?.share.app.routeTable ?? [],
  rows,
});
