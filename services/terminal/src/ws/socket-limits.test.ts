// Attached WebSockets are capped per user and in total on each replica (issue 27 item 6): a user's tabs on their
// own sessions were unlimited, so one caller could hold every socket of the gateway.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, startTestGateway, upgradeStatus, type TerminalClient } from '../testing/test-gateway.ts';

let gateway: Awaited<ReturnType<typeof startTestGateway>>;
let admin: string;
const clients: TerminalClient[] = [];

beforeAll(async () => {
  gateway = await startTestGateway(await createTestDatabase('sockets'), { sessions: { max_sockets_per_user: 2, max_sockets: 3 } });
  admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await gateway?.close();
});

async function startSession(cookie: string): Promise<string> {
  const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'main' } });
  expect(started.status).toBe(200);
  return started.json.data.websocket_path as string;
}

const attach = async (path: string, cookie: string) => {
  const client = await openTerminal(gateway.url, path, { cookie });
  clients.push(client);
  return client;
};

describe('terminal socket caps', () => {
  it('refuses the upgrade with 429 beyond the per-user cap and 503 beyond the total, and frees slots on close', async () => {
    const alice = await createUser(gateway.url, admin, 'alice');
    const bob = await createUser(gateway.url, admin, 'bob');
    const alicePath = await startSession(alice.cookie);
    const bobPath = await startSession(bob.cookie);

    const first = await attach(alicePath, alice.cookie);
    await attach(alicePath, alice.cookie);
    expect(await upgradeStatus(gateway.url, alicePath, { cookie: alice.cookie })).toBe(429);

    await attach(bobPath, bob.cookie);
    expect(await upgradeStatus(gateway.url, bobPath, { cookie: bob.cookie })).toBe(503);

    await first.close();
    let status = 0;
    for (let i = 0; i < 50 && status !== 101; i++) {
      status = await upgradeStatus(gateway.url, alicePath, { cookie: alice.cookie });
      if (status !== 101) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(101);
  });

  it('answers the refusal in the envelope with Retry-After', async () => {
    const carol = await createUser(gateway.url, admin, 'carol');
    const path = await startSession(carol.cookie);
    // The total (3) is taken by the two sockets left open above plus this one.
    await attach(path, carol.cookie);
    const refused = await new Promise<{ status: number; retryAfter: string | undefined; body: string }>((resolve, reject) => {
      const request = httpRequest(`${gateway.url}${path}`, {
        headers: {
          cookie: carol.cookie,
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
      });
      request.on('response', (response) => {
        let body = '';
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'], body }));
      });
      request.on('upgrade', () => reject(new Error('upgraded')));
      request.on('error', reject);
      request.end();
    });
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toMatch(/^\d+$/);
    expect(JSON.parse(refused.body)).toMatchObject({ success: false, message: expect.stringContaining('too many open terminal sockets') });
  });
});
