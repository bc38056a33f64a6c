// Something else listening where a session's agent was (a pod that got a dead session pod's IP; here a server on the
// recorded address): the gateway must not hand it anything that lets it attach, nor the user's keystrokes, nor take
// its answers for the agent's. The gateway and the agent are real (local backend); the record is pointed at the
// impostor, as an IP takeover would.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, login, openTerminal, startTestGateway } from '../testing/test-gateway.ts';
import { CLOSE_CODES } from '../protocol.ts';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

/** Answers like an agent would (a challenge gets a made-up proof, an upgrade is accepted) and records everything. */
function startImpostor(path: string) {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const received: string[] = [];
  let gotSomething!: () => void;
  const firstMessage = new Promise<void>((resolve) => (gotSomething = resolve));
  const wss = new WebSocketServer({ noServer: true });
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          nonce: 'A'.repeat(43),
          proof: 'B'.repeat(43),
          session_id: 'x',
          pid: 1,
          exited: false,
          now: Date.now(),
          attached: 0,
          last_activity_at: Date.now(),
          detached_since: null,
        }),
      );
    });
  });
  server.on('upgrade', (request, socket, head) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: '' });
    wss.handleUpgrade(request, socket, head, (ws) => {
      ws.on('message', (data) => {
        received.push(data.toString());
        gotSomething();
      });
      ws.send(Buffer.from('impostor prompt$ '), { binary: true });
    });
  });
  return {
    seen,
    received,
    firstMessage,
    listening: new Promise<void>((resolve) => server.listen(path, resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('an impostor at the agent address', () => {
  let gateway: Gateway;
  let admin: string;
  let database: pg.Client;
  let dir: string;

  beforeAll(async () => {
    const url = await createTestDatabase('terminal_impostor');
    gateway = await startTestGateway(url);
    admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    database = new pg.Client({ connectionString: url });
    await database.connect();
    dir = mkdtempSync(join(tmpdir(), 'impostor-'));
  });

  afterAll(async () => {
    await database?.end();
    await gateway?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gets neither the agent secret nor keystrokes, and its answers are not taken for the agent’s', async () => {
    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie: admin, body: { terminal_cookie: 'impostor' } });
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    const id = started.json.data.session.id as string;
    const row = (await gateway.sessions.store.get(id))!;
    const secret = gateway.sessions.secretOf(row);

    // The real agent works through the gateway.
    const real = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie: admin });
    real.type('echo $((6*7))\r');
    await real.waitFor(/^42$/m);
    await real.close();

    const impostor = startImpostor(join(dir, 'agent.sock'));
    await impostor.listening;
    try {
      const { rows } = await database.query("select table_schema from information_schema.tables where table_name = 'terminal_sessions'");
      await database.query(`update "${String(rows[0]?.table_schema)}".terminal_sessions set agent_address = $1 where id = $2`, [
        `unix:${join(dir, 'agent.sock')}`,
        id,
      ]);

      const attempt = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie: admin });
      attempt.type('my-password-typed-in\r');
      // Either the gateway gives up on the address, or the impostor gets what was typed.
      const closed = await Promise.race([attempt.closed, impostor.firstMessage.then(() => undefined)]);
      expect(impostor.received).toEqual([]);
      expect(closed?.code).toBe(CLOSE_CODES.agentUnavailable);
      expect(attempt.output()).not.toContain('impostor prompt');

      // Stopping it: the stop request must not go to the impostor either.
      await gateway.sessions.stop(id);

      const everything = JSON.stringify(impostor.seen);
      expect(everything).not.toContain(secret);
      // At most the challenge that an agent answers with its proof: no attach, no terminate.
      expect(impostor.seen.filter((r) => r.url !== '/challenge')).toEqual([]);
      expect(impostor.received).toEqual([]);
    } finally {
      await impostor.close();
      await gateway.sessions.stop(id);
    }
  }, 60_000);
});
