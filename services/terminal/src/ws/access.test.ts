// An attached socket lives only as long as the access it was opened with: real WebSocket clients against two
// gateway replicas on the run's PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, startTestGateway } from '../testing/test-gateway.ts';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

async function attached(base: string, cookie: string, terminalCookie: string) {
  const started = await api(base, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: terminalCookie } });
  expect(started.status, JSON.stringify(started.json)).toBe(200);
  const term = await openTerminal(base, started.json.data.websocket_path as string, { cookie });
  term.type('echo rea""dy\r');
  await term.waitFor(/^ready$/m);
  return { term, session: started.json.data.session as { id: string }, path: started.json.data.websocket_path as string };
}

describe('terminal: attached sockets end with their access', () => {
  let gateway: Gateway;
  let replica: Gateway;
  let admin: string;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase('terminal_access');
    gateway = await startTestGateway(databaseUrl);
    // A second replica: same database and session secret, its own LISTEN connection.
    replica = await startTestGateway(databaseUrl, { session: { secret: gateway.config.session.secret } });
    admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
  });
  afterAll(async () => {
    await replica?.close();
    await gateway?.close();
  });

  it('sign-out closes the socket with 4401 "signed out"; the shell lives on for the next sign-in', async () => {
    const user = await createUser(gateway.url, admin, 'sol');
    const { term, path } = await attached(gateway.url, user.cookie, 'main');
    expect((await api(gateway.url, 'POST', '/auth/logout', { cookie: user.cookie })).status).toBe(200);
    expect(await term.closed).toEqual({ code: 4401, reason: 'session ended: signed out' });
    expect(term.controls.at(-1)).toEqual({ type: 'error', message: 'Your session ended: you signed out. Sign in again to reattach.' });
    // The old cookie can't attach again; a new sign-in reattaches to the same shell, scrollback and all.
    const again = await login(gateway.url, 'sol', user.password);
    const back = await openTerminal(gateway.url, path, { cookie: again });
    await back.waitFor(/^ready$/m);
    await back.close();
  });

  it('a sign-out on another replica closes the socket on this one', async () => {
    const user = await createUser(gateway.url, admin, 'rep');
    const { term } = await attached(gateway.url, user.cookie, 'main');
    expect((await api(replica.url, 'POST', '/auth/logout', { cookie: user.cookie })).status).toBe(200);
    expect(await term.closed).toEqual({ code: 4401, reason: 'session ended: signed out' });
  });

  it('an admin disabling the account closes its sockets with 4403 and ends its sessions; re-enabling lets it in again', async () => {
    const user = await createUser(gateway.url, admin, 'dis');
    const { term, session } = await attached(gateway.url, user.cookie, 'main');
    // Attached through the replica, disabled through the first gateway.
    const other = await openTerminal(replica.url, `/ws/terminal/${session.id}`, { cookie: user.cookie });
    const disabled = await api(gateway.url, 'PATCH', `/api/users/${user.id}`, { cookie: admin, body: { disabled: true } });
    expect(disabled.status).toBe(200);
    expect(disabled.json.data.user).toMatchObject({ id: user.id, disabled: true });
    const closed = await Promise.all([term.closed, other.closed]);
    // The sockets hear either the access ending or the session being stopped (both follow the disable).
    for (const result of closed) expect([4403, 4300]).toContain(result.code);
    expect(
      closed.some((result) => result.code === 4403 && result.reason === 'access withdrawn: account disabled or deleted') ||
        closed.every((r) => r.code === 4300),
    ).toBe(true);
    const listed = await api(gateway.url, 'GET', '/api/terminal/sessions?include_ended=true', { cookie: admin });
    expect(listed.json.data.sessions.find((s: { id: string }) => s.id === session.id)).toMatchObject({ state: 'stopped' });
    // Disabled: no sign-in, the old cookie is refused.
    expect((await api(gateway.url, 'POST', '/auth/login/basic', { body: { username: 'dis', password: user.password } })).status).toBe(401);
    expect((await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie: user.cookie })).status).toBe(401);
    expect((await api(gateway.url, 'GET', '/api/users', { cookie: admin })).json.data.users.find((u: { id: string }) => u.id === user.id)).toMatchObject({
      disabled: true,
    });
    expect((await api(gateway.url, 'PATCH', `/api/users/${user.id}`, { cookie: admin, body: { disabled: false } })).status).toBe(200);
    await login(gateway.url, 'dis', user.password);
  });

  it('closes with 4403 when the account is deleted, without stopping anyone else', async () => {
    const user = await createUser(gateway.url, admin, 'del');
    const bystander = await createUser(gateway.url, admin, 'stay');
    const { term } = await attached(gateway.url, user.cookie, 'main');
    const kept = await attached(replica.url, bystander.cookie, 'main');
    expect((await api(gateway.url, 'DELETE', `/api/users/${user.id}`, { cookie: admin })).status).toBe(200);
    expect([4403, 4300]).toContain((await term.closed).code);
    expect((await api(gateway.url, 'GET', '/api/users', { cookie: admin })).json.data.users.map((u: { username: string }) => u.username)).not.toContain('del');
    kept.term.type('echo still-$((40+2))\r');
    await kept.term.waitFor('still-42');
    await kept.term.close();
  });

  it('a socket attached when the row changes underneath (a direct SQL disable) closes too: the trigger notifies', async () => {
    const user = await createUser(gateway.url, admin, 'sql');
    const { term } = await attached(gateway.url, user.cookie, 'main');
    // Not through the routes (so nothing stops sessions): only the account watch can close this socket.
    const { createDatabasePool } = await import('@boxyard/kit');
    const { sql } = await import('slonik');
    const pool = await createDatabasePool({ url: gateway.config.database.url, schema: gateway.config.database.schema });
    try {
      await pool.query(sql.unsafe`update users set disabled_at = now() where id = ${user.id}::uuid`);
    } finally {
      await pool.end();
    }
    expect(await term.closed).toEqual({ code: 4403, reason: 'access withdrawn: account disabled or deleted' });
  });

  it('refuses changes to your own account and bad requests in the service shape', async () => {
    const me = (await api(gateway.url, 'GET', '/auth/status', { cookie: admin })).json.data.user.id as string;
    const self = await api(gateway.url, 'PATCH', `/api/users/${me}`, { cookie: admin, body: { role: 'user' } });
    expect(self.status).toBe(400);
    expect(self.json).toMatchObject({ success: false, message: 'You cannot change your own account' });
    expect((await api(gateway.url, 'DELETE', `/api/users/${me}`, { cookie: admin })).status).toBe(400);
    expect((await api(gateway.url, 'PATCH', '/api/users/00000000-0000-4000-8000-000000000000', { cookie: admin, body: { disabled: true } })).status).toBe(404);
    expect((await api(gateway.url, 'PATCH', `/api/users/${me}`, { cookie: admin, body: {} })).status).toBe(400);
    const user = await createUser(gateway.url, admin, 'plain');
    expect((await api(gateway.url, 'PATCH', `/api/users/${me}`, { cookie: user.cookie, body: { disabled: true } })).status).toBe(403);
  });
});

describe('terminal: a socket ends when its token expires', () => {
  let gateway: Gateway;
  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_expiry'), { session: { ttl_seconds: 8 } });
  });
  afterAll(() => gateway?.close());

  it('closes with 4401 "token expired" at the token\'s expiry', async () => {
    const admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    const { term } = await attached(gateway.url, admin, 'main');
    expect(await term.closed).toEqual({ code: 4401, reason: 'session ended: token expired' });
    expect(term.controls.at(-1)).toMatchObject({ type: 'error', message: expect.stringContaining('expired') });
  });
});
