// The local backend's spare agent, as a user and an operator would check it: a session started on a spare works
// and is its owner's alone, the spare is replaced (never handed to a second session), stopping such a session
// ends its process, and closing the gateway leaves no spare behind.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { defaultSocketDir } from './local.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, startTestGateway, type TerminalClient } from '../testing/test-gateway.ts';
import { ignoreError } from '@boxyard/kit';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
const root = process.getuid?.() === 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` holds (a process takes a moment to appear or go); fails with `what` after ~20 s. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`still not: ${what}`);
}

const pidOf = (resource: string) => Number(/^pid:(\d+)/.exec(resource)?.[1]);

describe('warm agents (local backend)', () => {
  let gateway: Gateway;
  let admin: string;
  const clients: TerminalClient[] = [];

  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_warm'));
    admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(ignoreError('teardown: a client already closed'))));
    if (gateway) {
      const all = await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie: admin });
      for (const session of all.json.data?.sessions ?? []) await gateway.sessions.stop(session.id);
      await gateway.close();
    }
  });

  const startOn = async (cookie: string, terminalCookie: string) => {
    const result = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: terminalCookie } });
    expect(result.status, JSON.stringify(result.json)).toBe(200);
    const row = await gateway.sessions.store.get(result.json.data.session.id);
    const client = await openTerminal(gateway.url, result.json.data.websocket_path, { cookie });
    clients.push(client);
    return { id: row!.id, resource: row!.agent_resource!, client };
  };

  it('starts a session on the waiting spare, which then serves only that session; a new spare replaces it', async () => {
    await until('a spare is waiting', () => gateway.backend.warmAgents!().length === 1);
    const spare = gateway.backend.warmAgents!()[0]!;

    const first = await startOn(admin, 'warm-first');
    expect(pidOf(first.resource)).toBe(spare);
    expect(first.resource).toMatch(/ warm:/);
    first.client.type('echo "I am $(id -un)"\r');
    const firstSays = /I am ([^\s"]+)\n/.exec(await first.client.waitFor(/I am [^\s"]+\n/))![1];

    await until('a new spare is waiting', () => gateway.backend.warmAgents!().length === 1 && gateway.backend.warmAgents!()[0] !== spare);
    const other = root ? await createUser(gateway.url, admin, 'warmbob') : { cookie: admin };
    const second = await startOn(other.cookie, 'warm-second');
    expect(pidOf(second.resource)).not.toBe(spare);
    second.client.type('echo "I am $(id -un)"\r');
    const secondSays = /I am ([^\s"]+)\n/.exec(await second.client.waitFor(/I am [^\s"]+\n/))![1];
    expect(firstSays).toBeTruthy();
    // Each shell is its owner's account (root gateways give every user an OS account of their own).
    if (root) expect(secondSays).not.toBe(firstSays);
  });

  it("a spare writes its compiled code to the agents' compile cache, inside the backend's private directory", async () => {
    await until('a spare is waiting', () => gateway.backend.warmAgents!().length === 1);
    const dir = defaultSocketDir();
    const cache = join(dir, 'compile-cache');
    // One subdirectory per Node version and V8 flags; the agent's own modules are among what it holds.
    await until('the compile cache holds entries', () => existsSync(cache) && readdirSync(cache).some((sub) => readdirSync(join(cache, sub)).length > 5));
    expect(statSync(dir).mode & 0o077).toBe(0);
    const spare = gateway.backend.warmAgents!()[0]!;
    expect(readFileSync(`/proc/${spare}/environ`, 'utf8').split('\0')).toContain(`NODE_COMPILE_CACHE=${cache}`);
  });

  it('stopping a session started on a spare ends its agent process', async () => {
    const session = await startOn(admin, 'warm-stopped');
    const pid = pidOf(session.resource);
    // The reaper's view: the process is there (it is recognised by its slot, its command line names no session).
    expect(await gateway.backend.probe({ id: session.id, resource: session.resource })).toEqual({ state: 'present' });
    const stopped = await api(gateway.url, 'DELETE', `/api/terminal/sessions/${session.id}/stop`, { cookie: admin });
    expect(stopped.status).toBe(200);
    expect((await session.client.closed).code).toBe(4300);
    await until(`agent ${pid} gone`, () => !existsSync(`/proc/${pid}`));
  });

  it('leaves no spare behind when the gateway closes', async () => {
    const other = await startTestGateway(await createTestDatabase('terminal_warm_close'));
    await until('a spare is waiting', () => other.backend.warmAgents!().length === 1);
    const spare = other.backend.warmAgents!()[0]!;
    await other.close();
    await until(`spare ${spare} gone`, () => !existsSync(`/proc/${spare}`));
  });
});
