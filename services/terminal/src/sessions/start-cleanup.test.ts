// A start that fails half-way (injected failure: the agent process is up, then the start throws, as when a pod's
// watch breaks after the pod exists): the gateway answers 503, records the session failed, and takes the agent
// down; a retry with the same terminal_cookie then gets one working session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import type { SessionBackend } from '../backends/types.ts';
import { ADMIN_PASSWORD, api, login, openTerminal, startTestGateway } from '../testing/test-gateway.ts';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a start that fails half-way (injected failure)', () => {
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let cookie: string;

  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_start_cleanup'));
    cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('releases the agent it got, marks the session failed, and a retry gets one working session', async () => {
    const backend: SessionBackend = gateway.backend;
    const realStart = backend.start.bind(backend);
    const realRelease = backend.release.bind(backend);
    const released: (string | null)[] = [];
    let started: { resource: string } | undefined;
    backend.start = async (spec, onResource) => {
      const agent = await realStart(spec, onResource);
      started = agent;
      throw new Error('lost the watch on the session pod');
    };
    backend.release = async (session) => {
      released.push(session.resource);
      return realRelease(session);
    };
    try {
      const failed = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'half-way' } });
      expect(failed.status).toBe(503);
      expect(failed.json).toMatchObject({ success: false, message: expect.stringContaining('lost the watch on the session pod') });
    } finally {
      backend.start = realStart;
    }
    const pid = Number(/^pid:(\d+)/.exec(started!.resource)?.[1]);
    expect(released).toContain(started!.resource);
    // Gone (a zombie until the gateway's process reaps it counts as gone the moment after).
    await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    const all = (await api(gateway.url, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json.data.sessions;
    expect(all).toEqual([expect.objectContaining({ state: 'failed', end_reason: 'start_failed', terminal_cookie: 'half-way' })]);

    const retried = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'half-way' } });
    expect(retried.status).toBe(200);
    expect(retried.json.data.reattached).toBe(false);
    const term = await openTerminal(gateway.url, retried.json.data.websocket_path, { cookie });
    term.type('echo $((6*7))\r');
    await term.waitFor(/^42\r?$/m);
    await term.close();
    const live = (await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie })).json.data.sessions;
    expect(live).toEqual([expect.objectContaining({ id: retried.json.data.session.id, state: 'running' })]);
    backend.release = realRelease;
    await gateway.sessions.stop(retried.json.data.session.id);
  });

  // The agent starts while the session's insert commits (sessions/service.ts): an insert that fails leaves no agent.
  it('takes the agent down when the session row is not written after all (injected failure)', async () => {
    const backend: SessionBackend = gateway.backend;
    const { store } = gateway.sessions;
    const realStart = backend.start.bind(backend);
    const realInsert = store.insert;
    const realRelease = backend.release.bind(backend);
    const released: (string | null)[] = [];
    let started: Promise<{ resource: string }> | undefined;
    backend.start = (spec, onResource) => (started = realStart(spec, onResource));
    backend.release = async (session) => {
      released.push(session.resource);
      return realRelease(session);
    };
    store.insert = async () => {
      // The agent is on its way by now: the insert fails while it starts.
      expect(started).toBeDefined();
      throw new Error('injected: the insert failed');
    };
    try {
      const failed = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'insert-fails' } });
      expect(failed.status).toBe(500);
    } finally {
      store.insert = realInsert;
      backend.start = realStart;
    }
    const agent = await started!;
    const pid = Number(/^pid:(\d+)/.exec(agent.resource)?.[1]);
    await expect.poll(() => released, { timeout: 10_000 }).toContain(agent.resource);
    await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    backend.release = realRelease;
    const all = (await api(gateway.url, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json.data.sessions;
    expect(all.filter((session: { terminal_cookie: string }) => session.terminal_cookie === 'insert-fails')).toEqual([]);
  });
});
