// The terminal's access matrix: every route of the running gateway × every role, each cell a real request on
// the run's PostgreSQL (shells from the local backend). Roles: anonymous; the user who owns the fixture session;
// another user (who must neither attach to nor stop it); an admin (who may stop it but never attach to someone
// else's shell); and credentials that no longer work: the owner's session expired, and signed out. The
// WebSocket row is a real upgrade: 101 only for the owner.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSessionTokens } from '@boxyard/kit';
import { afterAll, beforeAll } from 'vitest';
import { describeAccessMatrix, outcomes, reusable, type MatrixRow, type RoleSpec } from '@boxyard/test/harness/access-matrix.ts';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { operationalRows } from '@boxyard/test/harness/operational-rows.ts';
import { ADMIN_PASSWORD, createUser, login, startTestGateway, upgradeStatus } from './testing/test-gateway.ts';

type Role = 'anonymous' | 'owner' | 'otherUser' | 'admin' | 'expiredSession' | 'signedOutSession';
const ROLES: RoleSpec<Role>[] = [
  { name: 'anonymous' },
  { name: 'owner' },
  { name: 'otherUser' },
  { name: 'admin' },
  { name: 'expiredSession' },
  { name: 'signedOutSession' },
];
const UNAUTHENTICATED: Role[] = ['anonymous', 'expiredSession', 'signedOutSession'];
const SIGNED_IN: Role[] = ['owner', 'otherUser', 'admin'];

const grant = (roles: Role[], status: number) => Object.fromEntries(roles.map((role) => [role, status])) as Partial<Record<Role, number>>;
const expect_ = (granted: Partial<Record<Role, number>>, otherwise = 403) => outcomes(ROLES, UNAUTHENTICATED, granted, otherwise);
const all = (status: number) =>
  expect_(
    grant(
      ROLES.map((r) => r.name),
      status,
    ),
  );

let gateway: Awaited<ReturnType<typeof startTestGateway>>;
const cookies = {} as Record<Role, string | undefined>;
const passwords: Partial<Record<Role, { username: string; password: string }>> = {};
let counter = 0;
const unique = (prefix: string) => `${prefix}${++counter}`;

async function send(role: Role, method: string, path: string, json?: unknown, cookie = cookies[role]): Promise<number> {
  const headers: Record<string, string> = {};
  if (cookie) headers.cookie = cookie;
  if (json !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url}${path}`, { method, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}), redirect: 'manual' });
  await response.arrayBuffer();
  return response.status;
}

async function startSession(role: Role, terminalCookie: string): Promise<string> {
  const response = await fetch(`${gateway.url}/api/terminal/start`, {
    method: 'POST',
    headers: { cookie: cookies[role]!, 'content-type': 'application/json' },
    body: JSON.stringify({ terminal_cookie: terminalCookie }),
  });
  if (response.status !== 200) throw new Error(`start: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { data: { session: { id: string } } }).data.session.id;
}

let attachable: string;
let recordings: string;

function rows(): MatrixRow<Role>[] {
  const rows: MatrixRow<Role>[] = operationalRows(ROLES, (role, method, path) => send(role, method, path));
  const add = (route: string, expected: Partial<Record<Role, number>>, call: MatrixRow<Role>['call'], extra: Partial<MatrixRow<Role>> = {}) =>
    rows.push({ route, expected, call, ...extra });

  // Signing in and out, and the page: open to everyone (the page signs in through the routes above).
  add('POST /auth/login/basic', all(200), (role) => send(role, 'POST', '/auth/login/basic', { username: 'owner', password: passwords.owner!.password }));
  // Signing out ends the session sent with it; the signed-in roles end one made for the purpose.
  add('POST /auth/logout', all(200), async (role) => {
    const account = passwords[role];
    return send(role, 'POST', '/auth/logout', undefined, account ? await login(gateway.url, account.username, account.password) : cookies[role]);
  });
  add('GET /auth/status', all(200), (role, m) => send(role, m, '/auth/status'));
  add('GET /auth/methods', all(200), (role, m) => send(role, m, '/auth/methods'));
  add('GET /', all(200), (role, m) => send(role, m, '/'));
  add('GET /assets/:file', all(200), (role, m) => send(role, m, '/assets/app.js'));
  add('GET /vendor/:file', all(200), (role, m) => send(role, m, '/vendor/xterm.mjs'));

  // Users: administrators only.
  add('GET /api/users', expect_(grant(['admin'], 200)), (role, m) => send(role, m, '/api/users'));
  add('POST /api/users', expect_(grant(['admin'], 200)), (role) =>
    send(role, 'POST', '/api/users', { username: unique('made'), password: `Pw-${unique('secret')}-long-7a`, role: 'user' }),
  );
  // Changing and deleting an account: a throwaway user, made again once a call succeeded.
  const target = reusable(async () => (await createUser(gateway.url, cookies.admin!, unique('target'))).id);
  add('PATCH /api/users/:id', expect_(grant(['admin'], 200)), (role) => target((id) => send(role, 'PATCH', `/api/users/${id}`, { disabled: true })));
  add('DELETE /api/users/:id', expect_(grant(['admin'], 200)), (role) => target((id) => send(role, 'DELETE', `/api/users/${id}`)));

  // Sessions: everyone signed in starts and lists their own (admins see all); stopping is for the owner or an
  // admin (someone else's session does not exist for another user); attaching is for the owner alone.
  add('POST /api/terminal/start', expect_(grant(SIGNED_IN, 200)), (role) => send(role, 'POST', '/api/terminal/start', { terminal_cookie: `matrix-${role}` }));
  add('GET /api/terminal/sessions', expect_(grant(SIGNED_IN, 200)), (role, m) => send(role, m, '/api/terminal/sessions'));
  const stoppable = reusable(() => startSession('owner', unique('to-stop-')));
  add('DELETE /api/terminal/sessions/:id/stop', expect_({ ...grant(['owner', 'admin'], 200), otherUser: 404 }), (role) =>
    stoppable((id) => send(role, 'DELETE', `/api/terminal/sessions/${id}/stop`)),
  );
  add(
    'GET /ws/terminal/:sessionId',
    expect_({ owner: 101, otherUser: 404, admin: 404 }),
    (role, method) =>
      method === 'HEAD'
        ? send(role, 'HEAD', `/ws/terminal/${attachable}`)
        : upgradeStatus(gateway.url, `/ws/terminal/${attachable}`, cookies[role] ? { cookie: cookies[role] } : {}),
    {
      // A plain request (no upgrade) is refused the same way before it reaches the socket handler; the owner's
      // gets 404 as a plain GET of the path would.
      headExpected: { owner: 404 },
    },
  );
  // Recordings (of the attachable session, recorded from its start): the owner's and admins'; for another user
  // it does not exist. Search and the list answer everyone signed in (with what they may see). The audit log: admins.
  add('GET /api/terminal/recordings', expect_(grant(SIGNED_IN, 200)), (role, m) => send(role, m, '/api/terminal/recordings'));
  add('GET /api/terminal/recordings/search', expect_(grant(SIGNED_IN, 200)), (role, m) => send(role, m, '/api/terminal/recordings/search?q=matrix'));
  add('GET /api/terminal/recordings/:id', expect_({ ...grant(['owner', 'admin'], 200), otherUser: 404 }), (role, m) =>
    send(role, m, `/api/terminal/recordings/${attachable}`),
  );
  add('GET /api/terminal/recordings/:id/cast', expect_({ ...grant(['owner', 'admin'], 200), otherUser: 404 }), (role, m) =>
    send(role, m, `/api/terminal/recordings/${attachable}/cast`),
  );
  add('GET /api/terminal/audit', expect_(grant(['admin'], 200)), (role, m) => send(role, m, '/api/terminal/audit'));
  add('GET /api/terminal/audit/export', expect_(grant(['admin'], 200)), (role, m) => send(role, m, '/api/terminal/audit/export'));
  return rows;
}

beforeAll(async () => {
  recordings = mkdtempSync(join(tmpdir(), 'matrix-recordings-'));
  gateway = await startTestGateway(await createTestDatabase('term_matrix'), { recording: { mode: 'on' }, storage: { driver: 'local', root: recordings } });
  const adminCookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
  cookies.anonymous = undefined;
  cookies.admin = adminCookie;
  passwords.admin = { username: 'admin', password: ADMIN_PASSWORD };
  for (const role of ['owner', 'otherUser'] as const) {
    const user = await createUser(gateway.url, adminCookie, role.toLowerCase());
    cookies[role] = user.cookie;
    passwords[role] = { username: user.username, password: user.password };
  }
  // The owner's session, expired an hour ago (signed with the gateway's own key), and one signed out.
  const tokens = createSessionTokens({
    secrets: [gateway.config.session.secret],
    issuer: gateway.config.session.issuer,
    audience: gateway.config.session.audience,
    typ: 'boxyard-terminal-session+jwt',
    ttlSeconds: gateway.config.session.ttl_seconds,
  });
  const me = (await (await fetch(`${gateway.url}/auth/status`, { headers: { cookie: cookies.owner! } })).json()) as { data: { user: { id: string } } };
  cookies.expiredSession = `auth_token=${(await tokens.sign(me.data.user.id, {}, -3600)).token}`;
  const signedOut = await login(gateway.url, passwords.owner!.username, passwords.owner!.password);
  if ((await fetch(`${gateway.url}/auth/logout`, { method: 'POST', headers: { cookie: signedOut } })).status !== 200) throw new Error('logout');
  cookies.signedOutSession = signedOut;
  attachable = await startSession('owner', 'attach-me');
  // Its recording begins as the session runs.
  for (let i = 0; i < 50 && (await send('owner', 'GET', `/api/terminal/recordings/${attachable}`)) !== 200; i++) await new Promise((r) => setTimeout(r, 100));
});
afterAll(async () => {
  await gateway?.close();
  rmSync(recordings, { recursive: true, force: true });
});

describeAccessMatrix<Role>({
  service: 'terminal',
  roles: ROLES,
  routeTable: () => gateway?.app.routeTable ?? [],
  rows,
});
