// The audit log as an auditor reads it: start, attach, resize, detach and stop of a session, each with the user,
// the address and user agent it came from and the shell's process; filters, paging and the JSON lines export;
// only admins may read it; the Prometheus counters count the events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, startTestGateway } from '../testing/test-gateway.ts';

describe('terminal audit log', () => {
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let admin: string;
  let carol: Awaited<ReturnType<typeof createUser>>;
  let sessionId: string;

  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_audit'));
    admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    carol = await createUser(gateway.url, admin, 'carol');
    const started = await fetch(`${gateway.url}/api/terminal/start`, {
      method: 'POST',
      headers: { cookie: carol.cookie, 'content-type': 'application/json', 'user-agent': 'audit-test/1.0' },
      body: JSON.stringify({ terminal_cookie: 'audit-1' }),
    });
    sessionId = ((await started.json()) as { data: { session: { id: string } } }).data.session.id;
    const client = await openTerminal(gateway.url, `/ws/terminal/${sessionId}`, { cookie: carol.cookie });
    client.control({ type: 'resize', cols: 100, rows: 30 });
    client.type('echo ready\r');
    await client.waitFor('ready');
    await client.close();
    await api(gateway.url, 'DELETE', `/api/terminal/sessions/${sessionId}/stop`, { cookie: carol.cookie });
    await gateway.audit.settle();
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
  });

  it('records start, attach, resize, detach and stop with user, address and process', async () => {
    const { status, json } = await api(gateway.url, 'GET', `/api/terminal/audit?session_id=${sessionId}`, { cookie: admin });
    expect(status).toBe(200);
    const events = [...json.data.events].reverse();
    expect(events.map((e: { event: string }) => e.event)).toEqual(['start', 'attach', 'resize', 'detach', 'stop']);
    for (const event of events) {
      expect(event).toMatchObject({ user: { id: carol.id, username: 'carol' }, session_id: sessionId, address: '127.0.0.1' });
      expect(event.resource).toMatch(/^pid:\d+/);
    }
    expect(events[0].user_agent).toBe('audit-test/1.0');
    expect(events[2].detail).toEqual({ cols: 100, rows: 30 });
  });

  it('filters, pages and exports JSON lines', async () => {
    const starts = await api(gateway.url, 'GET', `/api/terminal/audit?event=start&username=carol`, { cookie: admin });
    expect(starts.json.data.events).toHaveLength(1);
    const page = await api(gateway.url, 'GET', `/api/terminal/audit?session_id=${sessionId}&limit=2`, { cookie: admin });
    expect(page.json.data.events).toHaveLength(2);
    const next = await api(gateway.url, 'GET', `/api/terminal/audit?session_id=${sessionId}&limit=5&before=${page.json.data.next_before}`, { cookie: admin });
    expect(next.json.data.events.map((e: { event: string }) => e.event)).toEqual(['resize', 'attach', 'start']);
    const future = await api(gateway.url, 'GET', `/api/terminal/audit?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, {
      cookie: admin,
    });
    expect(future.json.data.events).toEqual([]);
    const exported = await fetch(`${gateway.url}/api/terminal/audit/export?session_id=${sessionId}`, { headers: { cookie: admin } });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await exported.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((e) => e.event).reverse()).toEqual(['start', 'attach', 'resize', 'detach', 'stop']);
  });

  it('is for admins only, and refuses bad filters in the error shape', async () => {
    for (const path of ['/api/terminal/audit', '/api/terminal/audit/export']) {
      const user = await api(gateway.url, 'GET', path, { cookie: carol.cookie });
      expect(user.status).toBe(403);
      expect(user.json.success).toBe(false);
      expect((await api(gateway.url, 'GET', path)).status).toBe(401);
    }
    // A page cursor beyond any id (bigint overflow in PostgreSQL: a 500 the fuzzer found).
    for (const query of ['limit=100000', 'event=typing', 'session_id=nope', 'since=yesterday', 'before=36893488147419103232']) {
      const refused = await api(gateway.url, 'GET', `/api/terminal/audit?${query}`, { cookie: admin });
      expect(refused.status, query).toBe(400);
      expect(refused.json.success).toBe(false);
    }
  });

  it('counts events for Prometheus', async () => {
    const text = await (await fetch(gateway.metricsUrl)).text();
    expect(text).toMatch(/boxyard_terminal_audit_events_total\{[^}]*event="attach"[^}]*\} [1-9]/);
  });
});
