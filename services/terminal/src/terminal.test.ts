// The terminal service against real processes: a gateway on the run's PostgreSQL, real agents with real
// shells on pseudo-terminals (local backend), real WebSocket clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, startTestGateway, upgradeStatus, type TerminalClient } from './testing/test-gateway.ts';
import { ignoreError } from '@boxyard/kit';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Person = { cookie: string; id: string; username: string };

const start = async (base: string, cookie: string, terminalCookie: string) => {
  const result = await api(base, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: terminalCookie } });
  expect(result.status, JSON.stringify(result.json)).toBe(200);
  return result.json.data as { session: { id: string; state: string }; reattached: boolean; websocket_path: string };
};

describe('terminal service (local backend)', () => {
  let gateway: Gateway;
  let base: string;
  let admin: string;
  let alice: Person;
  let bob: Person;
  const clients: TerminalClient[] = [];
  const attach = async (path: string, cookie: string) => {
    const client = await openTerminal(base, path, { cookie });
    clients.push(client);
    return client;
  };

  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase('terminal');
    gateway = await startTestGateway(databaseUrl);
    base = gateway.url;
    admin = await login(base, 'admin', ADMIN_PASSWORD);
    alice = await createUser(base, admin, 'alice');
    bob = await createUser(base, admin, 'bob');
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(ignoreError('teardown: a client already closed'))));
    if (gateway) {
      // No shell outlives the test file.
      const all = await api(base, 'GET', '/api/terminal/sessions', { cookie: admin });
      for (const session of all.json.data?.sessions ?? []) await gateway.sessions.stop(session.id);
      await gateway.close();
    }
  });

  describe('sign-in', () => {
    it('lists the methods and reports status before and after sign-in', async () => {
      expect((await api(base, 'GET', '/auth/methods')).json).toEqual({
        success: true,
        message: 'Available authentication methods',
        data: { methods: [{ type: 'basic', method: 'POST', path: '/auth/login/basic', fields: ['username', 'password'], cookie: 'auth_token' }] },
      });
      expect((await api(base, 'GET', '/auth/status')).json).toEqual({
        success: true,
        message: 'Not signed in',
        data: { authenticated: false, cookie: 'auth_token' },
      });
      expect((await api(base, 'GET', '/auth/status', { cookie: alice.cookie })).json).toMatchObject({
        success: true,
        data: { authenticated: true, cookie: 'auth_token', presented_in: 'cookie', user: { username: 'alice', role: 'user' } },
      });
    });

    it('sets the JWT in an HttpOnly, Secure, SameSite=Strict auth_token cookie; wrong passwords get 401', async () => {
      const response = await fetch(`${base}/auth/login/basic`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
      });
      expect(response.status).toBe(200);
      const cookie = response.headers.getSetCookie().find((c) => c.startsWith('auth_token='))!;
      expect(cookie).toMatch(/^auth_token=[\w-]+\.[\w-]+\.[\w-]+;/);
      expect(cookie).toMatch(/; HttpOnly/);
      expect(cookie).toMatch(/; Secure/);
      expect(cookie).toMatch(/; SameSite=Strict/);
      // The seed's "returns JWT": the same token in the body, which a script presents in the cookie.
      const body = (await response.json()) as { data: { token: string } };
      expect(body).toMatchObject({
        success: true,
        data: { token: cookie.slice('auth_token='.length, cookie.indexOf(';')), cookie: 'auth_token', user: { username: 'admin' } },
      });
      const status = await api(base, 'GET', '/auth/status', { cookie: `auth_token=${body.data.token}` });
      expect(status.json.data).toMatchObject({ authenticated: true, presented_in: 'cookie', user: { username: 'admin' } });
      const wrong = await api(base, 'POST', '/auth/login/basic', { body: { username: 'admin', password: 'Wrong-password-1' } });
      expect(wrong.status).toBe(401);
      expect(wrong.json).toEqual({ success: false, message: 'Invalid username or password', details: expect.any(String) });
      const missing = await api(base, 'POST', '/auth/login/basic', { body: { username: 'admin' } });
      expect(missing.status).toBe(400);
      expect(missing.json).toMatchObject({ success: false, details: expect.stringContaining('password') });
    });

    it('logout revokes the token: the old cookie no longer works', async () => {
      const person = await createUser(base, admin, 'carol');
      expect((await api(base, 'GET', '/api/terminal/sessions', { cookie: person.cookie })).status).toBe(200);
      const out = await api(base, 'POST', '/auth/logout', { cookie: person.cookie });
      expect(out.status).toBe(200);
      expect(out.headers.getSetCookie().join()).toMatch(/auth_token=;/);
      expect((await api(base, 'GET', '/api/terminal/sessions', { cookie: person.cookie })).status).toBe(401);
      expect((await api(base, 'GET', '/auth/status', { cookie: person.cookie })).json.data).toEqual({ authenticated: false, cookie: 'auth_token' });
    });
  });

  describe('accounts (admins only)', () => {
    it('refuses anonymous callers (401) and users (403); checks the password policy and duplicates', async () => {
      const body = { username: 'dave', password: 'Good-passw0rd' };
      expect((await api(base, 'POST', '/api/users', { body })).status).toBe(401);
      expect((await api(base, 'POST', '/api/users', { cookie: alice.cookie, body })).status).toBe(403);
      expect((await api(base, 'GET', '/api/users', { cookie: alice.cookie })).status).toBe(403);
      const weak = await api(base, 'POST', '/api/users', { cookie: admin, body: { username: 'dave', password: 'password' } });
      expect(weak.status).toBe(400);
      expect(weak.json.details).toMatch(/uppercase|digit/);
      expect((await api(base, 'POST', '/api/users', { cookie: admin, body })).status).toBe(200);
      expect((await api(base, 'POST', '/api/users', { cookie: admin, body })).status).toBe(409);
      const list = await api(base, 'GET', '/api/users', { cookie: admin });
      expect(list.json.data.users.map((u: { username: string }) => u.username)).toEqual(expect.arrayContaining(['admin', 'alice', 'bob', 'dave']));
    });
  });

  describe('a session', () => {
    let path: string;
    let sessionId: string;

    it('starts once per terminal_cookie: a second start (even a concurrent one) reattaches', async () => {
      const [first, second] = await Promise.all([start(base, alice.cookie, 'main'), start(base, alice.cookie, 'main')]);
      expect(first.session.id).toBe(second.session.id);
      expect([first.reattached, second.reattached].sort()).toEqual([false, true]);
      expect(first.websocket_path).toBe(`/ws/terminal/${first.session.id}`);
      const third = await start(base, alice.cookie, 'main');
      expect(third).toMatchObject({ reattached: true, session: { id: first.session.id, state: 'running' } });
      path = first.websocket_path;
      sessionId = first.session.id;
    });

    it('runs what is typed: echo $((6*7)) prints 42', async () => {
      const term = await attach(path, alice.cookie);
      term.type('echo $((6*7))\r');
      await term.waitFor(/^42$/m);
      await term.close();
    });

    it('delivers a flood of output whole and in order (bulk reads are coalesced into larger frames)', async () => {
      // A session of its own: this output would push the main session's earlier output out of its scrollback.
      // How many frames it takes depends on the machine's load (the coalescing waits on a timer): the bench's flood
      // row measures that; here, what a user checks: every line, once, in order.
      const flood = await start(base, alice.cookie, 'flood');
      try {
        const term = await attach(flood.websocket_path, alice.cookie);
        term.type('seq 1 200000; echo SEQ-""DONE\r');
        const seen = await term.waitFor(/^SEQ-DONE$/m, 60_000);
        const numbers = seen.slice(seen.indexOf('\n1\n') + 1, seen.lastIndexOf('\nSEQ-DONE')).split('\n');
        expect(numbers.length).toBe(200_000);
        expect(numbers.every((line, i) => line === String(i + 1))).toBe(true);
        await term.close();
      } finally {
        expect((await api(base, 'DELETE', `/api/terminal/sessions/${flood.session.id}/stop`, { cookie: alice.cookie })).status).toBe(200);
      }
    });

    it('resizes the pty: stty size sees the new size', async () => {
      const term = await attach(path, alice.cookie);
      term.control({ type: 'resize', cols: 123, rows: 45 });
      term.type('stty size\r');
      await term.waitFor(/^45 123$/m);
      await term.close();
    });

    it('replays earlier output to a socket that attaches later, then streams live', async () => {
      const term = await attach(path, alice.cookie);
      // Nothing typed yet on this socket: the 42 and the size come from the scrollback.
      await term.waitFor(/^42$/m);
      await term.waitFor(/^45 123$/m);
      term.type('echo replay-$((40+2))\r');
      await term.waitFor('replay-42');
      await term.close();
    });

    it('lets several sockets watch one session', async () => {
      const one = await attach(path, alice.cookie);
      const two = await attach(path, alice.cookie);
      one.type('echo both-$((1+1))\r');
      await one.waitFor('both-2');
      await two.waitFor('both-2');
      await Promise.all([one.close(), two.close()]);
    });

    it('answers heartbeats and explains bad control messages without closing', async () => {
      const term = await attach(path, alice.cookie);
      term.control({ type: 'ping' });
      term.control({ type: 'resize', cols: 0, rows: 10 });
      term.control({ type: 'launch-missiles' });
      term.socket.send('not json');
      await expect.poll(() => term.controls.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
      expect(term.controls[0]).toEqual({ type: 'pong' });
      expect(term.controls.slice(1).map((m) => m.type)).toEqual(['error', 'error', 'error']);
      expect(JSON.stringify(term.controls)).toContain('unknown message type \\"launch-missiles\\"');
      term.type('echo still-open\r');
      await term.waitFor('still-open');
      await term.close();
    });

    it("gives the shell a clean environment, as the user's own OS account when the gateway is root", async () => {
      const term = await attach(path, alice.cookie);
      // The quotes keep the echoed command line from matching what the command prints.
      term.type('echo user=$(id -un) uid=$(id -u) groups=$(id -G); env | cut -d= -f1 | sort | tr "\\n" " "; echo E""ND\r');
      const out = await term.waitFor(/^(?:[A-Z_]+ )+END$/m);
      const names = /^((?:[A-Z_]+ )+)END$/m.exec(out)?.[1]?.trim().split(' ');
      expect(names).toBeDefined();
      // Only the allow-list (bash adds PWD, SHLVL and _ itself); none of the gateway's variables.
      // LS_COLORS: the account's own ~/.bashrc (from /etc/skel) sets it.
      expect(names!.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD', 'LS_COLORS'].includes(n)).sort()).toEqual(['HOME', 'LANG', 'PATH', 'SHELL', 'TERM', 'USER']);
      if (process.getuid?.() === 0) {
        // `<prefix><12 hex digits of the user id>`, created on first use, with only its own group.
        const name = `${gateway.config.backend.local.accounts.prefix}${alice.id.replace(/-/g, '').slice(0, 12)}`;
        const match = new RegExp(`user=${name} uid=(\\d+) groups=(\\d+)$`, 'm').exec(out);
        expect(match, out).not.toBeNull();
        expect(Number(match![1])).toBeGreaterThan(0);
      }
      await term.close();
    });

    it('lists the session for its owner and admins only', async () => {
      const mine = await api(base, 'GET', '/api/terminal/sessions', { cookie: alice.cookie });
      expect(mine.json.data.sessions).toEqual([
        expect.objectContaining({
          id: sessionId,
          terminal_cookie: 'main',
          state: 'running',
          backend: 'local',
          owner: { id: alice.id, username: 'alice' },
          websocket_path: path,
        }),
      ]);
      const theirs = await api(base, 'GET', '/api/terminal/sessions', { cookie: bob.cookie });
      expect(theirs.json.data.sessions).toEqual([]);
      // An admin's list is every user's sessions, each with its owner.
      const bobs = await start(base, bob.cookie, 'listed');
      const all = await api(base, 'GET', '/api/terminal/sessions', { cookie: admin });
      expect(all.json.data.sessions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: sessionId, owner: { id: alice.id, username: 'alice' } }),
          expect.objectContaining({ id: bobs.session.id, owner: { id: bob.id, username: 'bob' } }),
        ]),
      );
      expect((await api(base, 'GET', '/api/terminal/sessions', { cookie: alice.cookie })).json.data.sessions.map((s: { id: string }) => s.id)).toEqual([
        sessionId,
      ]);
      await api(base, 'DELETE', `/api/terminal/sessions/${bobs.session.id}/stop`, { cookie: bob.cookie });
      const anonymous = await api(base, 'GET', '/api/terminal/sessions');
      expect(anonymous.status).toBe(401);
      expect(anonymous.json).toMatchObject({ success: false, message: expect.stringContaining('Authentication required') });
    });

    it("refuses another user: 404 on stop, 404 on the upgrade (admins can't attach to someone's shell either)", async () => {
      const stop = await api(base, 'DELETE', `/api/terminal/sessions/${sessionId}/stop`, { cookie: bob.cookie });
      expect(stop.status).toBe(404);
      expect(stop.json).toEqual({ success: false, message: 'Session does not exist', details: expect.any(String) });
      expect(await upgradeStatus(base, path, { cookie: bob.cookie })).toBe(404);
      expect(await upgradeStatus(base, path, { cookie: admin })).toBe(404);
      // ...and the session is unharmed.
      const term = await attach(path, alice.cookie);
      term.type('echo alive\r');
      await term.waitFor(/^alive$/m);
      await term.close();
    });

    it('refuses an upgrade without a cookie (401), with a bad Origin (403), and a cross-origin start (403)', async () => {
      expect(await upgradeStatus(base, path)).toBe(401);
      expect(await upgradeStatus(base, path, { cookie: 'auth_token=not-a-jwt' })).toBe(401);
      expect(await upgradeStatus(base, path, { cookie: alice.cookie, origin: 'https://evil.example' })).toBe(403);
      expect(await upgradeStatus(base, path, { cookie: alice.cookie, origin: base })).toBe(101);
      const crossSite = await api(base, 'POST', '/api/terminal/start', {
        cookie: alice.cookie,
        origin: 'https://evil.example',
        body: { terminal_cookie: 'x' },
      });
      expect(crossSite.status).toBe(403);
      expect(await upgradeStatus(base, '/ws/terminal/00000000-0000-4000-8000-000000000000', { cookie: alice.cookie })).toBe(404);
    });

    it('closes the socket with the exit code when the shell exits, and records it', async () => {
      const term = await attach(path, alice.cookie);
      term.type('exit 7\r');
      expect(await term.closed).toEqual({ code: 4007, reason: 'exited' });
      expect(term.controls.at(-1)).toEqual({ type: 'exit', code: 7, signal: null, reason: 'exited' });
      await expect
        .poll(
          async () =>
            (await api(base, 'GET', '/api/terminal/sessions?include_ended=true', { cookie: alice.cookie })).json.data.sessions.find(
              (s: { id: string }) => s.id === sessionId,
            ),
          { timeout: 15_000 },
        )
        .toMatchObject({ state: 'exited', exit_code: 7, end_reason: 'exited' });
      // An ended session: attaching tells how it ended; the same cookie starts a new shell.
      const late = await attach(path, alice.cookie);
      expect(await late.closed).toEqual({ code: 4007, reason: 'exited' });
      const next = await start(base, alice.cookie, 'main');
      expect(next.reattached).toBe(false);
      expect(next.session.id).not.toBe(sessionId);
    });
  });

  describe('stopping and limits', () => {
    it('stop ends the shell and closes its sockets with 4300; unknown and malformed ids get 404', async () => {
      const { session, websocket_path } = await start(base, bob.cookie, 'to-stop');
      const term = await attach(websocket_path, bob.cookie);
      term.type('echo ready\r');
      await term.waitFor(/^ready$/m);
      const stop = await api(base, 'DELETE', `/api/terminal/sessions/${session.id}/stop`, { cookie: bob.cookie });
      expect(stop.status).toBe(200);
      expect(stop.json).toMatchObject({
        success: true,
        message: 'Session stopped',
        data: { session: { id: session.id, state: 'stopped', end_reason: 'stopped' } },
      });
      expect(await term.closed).toEqual({ code: 4300, reason: 'stopped' });
      expect(term.controls.at(-1)).toMatchObject({ type: 'exit', reason: 'stopped' });
      const again = await api(base, 'DELETE', `/api/terminal/sessions/${session.id}/stop`, { cookie: bob.cookie });
      expect(again.json).toMatchObject({ success: true, data: { session: { state: 'stopped' } } });
      expect((await api(base, 'DELETE', '/api/terminal/sessions/00000000-0000-4000-8000-000000000000/stop', { cookie: bob.cookie })).status).toBe(404);
      // A malformed id names no session either: the seed's 404, on stop and on the upgrade alike.
      const malformed = await api(base, 'DELETE', '/api/terminal/sessions/nope/stop', { cookie: bob.cookie });
      expect(malformed.status).toBe(404);
      expect(malformed.json).toEqual({ success: false, message: 'Session does not exist', details: expect.any(String) });
      expect(await upgradeStatus(base, '/ws/terminal/nope', { cookie: bob.cookie })).toBe(404);
      expect(await upgradeStatus(base, `/ws/terminal/${session.id}x`, { cookie: bob.cookie })).toBe(404);
      expect((await api(base, 'DELETE', `/api/terminal/sessions/${session.id}/stop`)).status).toBe(401);
    });

    it('holds a flood back while one watching socket does not read (backpressure, not buffering)', async () => {
      const { session, websocket_path } = await start(base, bob.cookie, 'flood');
      const stalled = await attach(websocket_path, bob.cookie);
      const reader = await attach(websocket_path, bob.cookie);
      let received = 0;
      reader.socket.on('message', (data: Buffer, isBinary: boolean) => {
        if (isBinary) received += data.length;
      });
      // The stalled client stops reading from its TCP socket: the gateway and the agent must slow the shell down.
      stalled.socket.pause();
      const flood = 256 * 1024 * 1024;
      reader.type(`head -c ${flood} /dev/zero | tr '\\0' x; echo FLO""OD-DONE\r`);
      let last = -1;
      await expect
        .poll(
          () => {
            const stable = received === last && received > 0;
            last = received;
            return stable;
          },
          { timeout: 60_000, interval: 1500 },
        )
        .toBe(true);
      // Stuck well short of the flood: only bounded buffers (the high-water marks and the kernel's) are in flight.
      expect(received).toBeLessThan(flood / 4);
      expect(reader.output()).not.toContain('FLOOD-DONE');
      await api(base, 'DELETE', `/api/terminal/sessions/${session.id}/stop`, { cookie: bob.cookie });
      stalled.socket.terminate();
    });

    it('caps live sessions per user: the next start gets 429 with RateLimit headers', async () => {
      const person = await createUser(base, admin, 'erin');
      const ids: string[] = [];
      for (let i = 0; i < gateway.config.sessions.per_user_limit; i++) ids.push((await start(base, person.cookie, `cap-${i}`)).session.id);
      const refused = await api(base, 'POST', '/api/terminal/start', { cookie: person.cookie, body: { terminal_cookie: 'one-too-many' } });
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ success: false, message: expect.stringMatching(/at most 3 live sessions per user/) });
      expect(refused.headers.get('ratelimit-limit')).toBe('3');
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
      expect(Number(refused.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      // Reattaching to a live one is still fine, and a stop frees a slot.
      expect((await start(base, person.cookie, 'cap-0')).reattached).toBe(true);
      await api(base, 'DELETE', `/api/terminal/sessions/${ids[0]}/stop`, { cookie: person.cookie });
      expect((await start(base, person.cookie, 'one-too-many')).reattached).toBe(false);
    });
  });

  describe('replicas', () => {
    it('serves a session from any replica: records and secrets live in PostgreSQL', async () => {
      const replica = await startTestGateway(databaseUrl, { session: { secret: gateway.config.session.secret } });
      try {
        const { session, websocket_path } = await start(base, alice.cookie, 'replicated');
        // Started on the first gateway, attached and stopped through the second, with the same sign-in.
        const term = await openTerminal(replica.url, websocket_path, { cookie: alice.cookie });
        term.type('echo via-$((2*21))\r');
        await term.waitFor('via-42');
        const again = await api(replica.url, 'POST', '/api/terminal/start', { cookie: alice.cookie, body: { terminal_cookie: 'replicated' } });
        expect(again.json.data).toMatchObject({ reattached: true, session: { id: session.id } });
        expect((await api(replica.url, 'DELETE', `/api/terminal/sessions/${session.id}/stop`, { cookie: alice.cookie })).status).toBe(200);
        expect(await term.closed).toEqual({ code: 4300, reason: 'stopped' });
      } finally {
        await replica.close();
      }
    });
  });

  describe('operations', () => {
    it('documents the REST routes at /api-docs and /openapi.json, and serves the page with a CSP', async () => {
      const spec = (await api(base, 'GET', '/openapi.json')).json;
      expect(Object.keys(spec.paths)).toEqual(
        expect.arrayContaining([
          '/api/terminal/start',
          '/api/terminal/sessions',
          '/api/terminal/sessions/{id}/stop',
          '/auth/login/basic',
          '/auth/logout',
          '/auth/status',
          '/auth/methods',
        ]),
      );
      expect((await fetch(`${base}/api-docs/`)).status).toBe(200);
      const page = await fetch(`${base}/`);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await page.text()).toContain('/assets/app.js');
      for (const asset of ['/assets/app.js', '/vendor/xterm.mjs', '/vendor/addon-fit.mjs', '/vendor/addon-attach.mjs', '/vendor/xterm.css']) {
        expect((await fetch(`${base}${asset}`)).status, asset).toBe(200);
      }
      expect((await fetch(`${base}/vendor/package.json`)).status).toBe(404);
      expect((await fetch(`${base}/vendor/__proto__`)).status).toBe(404);
    });

    it('reports health, and metrics on their own listener only', async () => {
      expect((await api(base, 'GET', '/health/ready')).json).toEqual({ status: 'ok', checks: { postgres: 'ok' } });
      const publicPort = await api(base, 'GET', '/metrics');
      expect(publicPort.status).toBe(404);
      expect(publicPort.json).toMatchObject({ success: false });
      const metrics = await (await fetch(gateway.metricsUrl)).text();
      expect(metrics).toContain('route="/api/terminal/start"');
      expect(metrics).not.toMatch(/route="\/api\/terminal\/sessions\/[0-9a-f-]{36}/);
    });
  });
});

describe('time limits', () => {
  let gateway: Gateway;
  let base: string;

  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_limits'), {
      sessions: { idle_timeout_seconds: 6, reattach_grace_seconds: 2, reaper_interval_seconds: 1 },
    });
    base = gateway.url;
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('stops an idle session, telling the attached socket why (4301)', async () => {
    const cookie = await login(base, 'admin', ADMIN_PASSWORD);
    const { websocket_path, session } = await start(base, cookie, 'idle');
    const term = await openTerminal(base, websocket_path, { cookie });
    term.type('echo hi\r');
    expect(await term.closed).toEqual({ code: 4301, reason: 'idle_timeout' });
    await expect
      .poll(
        async () =>
          (await api(base, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json.data.sessions.find((s: { id: string }) => s.id === session.id),
        { timeout: 15_000 },
      )
      .toMatchObject({ state: 'stopped', end_reason: 'idle_timeout' });
  });

  it('stops a session nobody reattaches to within the grace period', async () => {
    const cookie = await login(base, 'admin', ADMIN_PASSWORD);
    const { websocket_path, session } = await start(base, cookie, 'left');
    const term = await openTerminal(base, websocket_path, { cookie });
    term.control({ type: 'resize', cols: 90, rows: 30 });
    await term.close();
    await expect
      .poll(
        async () =>
          (await api(base, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json.data.sessions.find((s: { id: string }) => s.id === session.id),
        { timeout: 30_000, interval: 500 },
      )
      .toMatchObject({ state: 'stopped', end_reason: 'reattach_grace' });
  });
});

describe('start failures', () => {
  it('answers 503 with the reason when the agent cannot start, and records the session as failed', async () => {
    const gateway = await startTestGateway(await createTestDatabase('terminal_fail'), { backend: { local: { shell: '/nonexistent/shell' } } });
    try {
      const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
      const refused = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'x' } });
      expect(refused.status).toBe(503);
      expect(refused.json).toMatchObject({ success: false, message: expect.stringContaining('shell /nonexistent/shell does not exist or is not executable') });
      const sessions = (await api(gateway.url, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json.data.sessions;
      expect(sessions).toEqual([expect.objectContaining({ state: 'failed', end_reason: 'start_failed' })]);
    } finally {
      await gateway.close();
    }
  });
});
