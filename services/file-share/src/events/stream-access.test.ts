// An event stream keeps only the access its caller still has. Heartbeats are set far apart (10 minutes) so only
// what this is about can end a stream here: PostgreSQL notifications from the other replica, and expiry timers.
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, createKey, createUser, sharedSecret, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const FAR = { events: { heartbeat_seconds: 600 } };

/** A raw SSE reader: the text so far, and whether the server ended the stream. */
async function stream(url: string, authorization: string) {
  const response = await fetch(`${url}/events`, { headers: { authorization } });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const ended = (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      text += decoder.decode(value, { stream: true });
    }
  })();
  const until = async (needle: string) => {
    while (!text.includes(needle)) {
      if (await Promise.race([ended.then(() => true), new Promise((r) => setTimeout(() => r(false), 50))])) {
        if (!text.includes(needle)) throw new Error(`stream ended without ${needle}: ${text}`);
      }
    }
  };
  await until(': connected');
  return { text: () => text, ended, until, cancel: () => reader.cancel() };
}

async function signIn(url: string, username: string, password: string): Promise<string> {
  const response = await fetch(`${url}/auth/login/basic`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { token: string } }).data.token;
}

describe('file-share event streams re-check their access', () => {
  let a: TestShare;
  let b: TestShare;
  beforeAll(async () => {
    const secret = sharedSecret();
    a = await startTestShare({ storage: 'local', sessionSecret: secret, overrides: FAR });
    b = await startTestShare({ storage: 'local', databaseUrl: a.databaseUrl, localRoot: a.localRoot!, sessionSecret: secret, overrides: FAR });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('ends the stream on one replica when its API key is deleted on the other', async () => {
    const user = await createUser(a.url, 'key-holder', 'user');
    const { token, id } = await createKey(a.url, user.authorization, { name: 'stream', permissions: ['downloads'] });
    const events = await stream(b.url, `Bearer ${token}`);
    expect((await fetch(`${a.url}/api/api-keys/${id}`, { method: 'DELETE', headers: { authorization: user.authorization } })).status).toBe(200);
    await events.ended;
    expect(events.text()).toContain('event: access-ended');
  });

  it('ends the stream when its session signs out on the other replica', async () => {
    const user = await createUser(a.url, 'session-holder', 'user');
    const token = await signIn(a.url, 'session-holder', user.password);
    const events = await stream(b.url, `Bearer ${token}`);
    const out = await fetch(`${a.url}/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(((await out.json()) as { data: { revoked: boolean } }).data.revoked).toBe(true);
    await events.ended;
    expect(events.text()).toContain('event: access-ended');
  });

  it('ends the stream when the account is disabled', async () => {
    const user = await createUser(a.url, 'to-disable', 'user');
    const events = await stream(b.url, user.authorization);
    await a.share.pool.query(sql.unsafe`update users set disabled_at = now() where username = 'to-disable'`);
    await events.ended;
    expect(events.text()).toContain('event: access-ended');
    // And the credentials are refused from now on.
    expect((await fetch(`${b.url}/events`, { headers: { authorization: user.authorization } })).status).toBe(401);
  });

  it('stops sending events about paths a narrowed key may no longer read, and ends when downloads is withdrawn', async () => {
    const { token, id } = await createKey(a.url, adminAuth, { name: 'narrowing', permissions: ['downloads'] });
    const events = await stream(b.url, `Bearer ${token}`);
    await upload(a.url, '/wide/one.txt', 'one', adminAuth);
    await events.until('/wide/one.txt');
    await a.share.pool.query(sql.unsafe`update api_keys set scope = '/narrow' where id = ${id}`);
    // Ordered: the change is seen before these events (the notification precedes them); wait for the narrow one.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await upload(a.url, '/wide/two.txt', 'two', adminAuth);
    await upload(a.url, '/narrow/three.txt', 'three', adminAuth);
    await events.until('/narrow/three.txt');
    expect(events.text()).not.toContain('/wide/two.txt');
    await a.share.pool.query(sql.unsafe`update api_keys set permissions = array['uploads'] where id = ${id}`);
    await events.ended;
    expect(events.text()).toContain('the downloads permission was withdrawn');
  });
});

describe('file-share event streams end at the credential expiry', () => {
  let share: TestShare;
  beforeAll(async () => {
    share = await startTestShare({ storage: 'local', overrides: { ...FAR, session: { ttl_seconds: 3 } } });
  });
  afterAll(() => share?.close());

  it('ends a session-token stream when the token expires', async () => {
    const token = await signIn(share.url, 'admin', 'Admin-Pass-2024!');
    const events = await stream(share.url, `Bearer ${token}`);
    await events.ended;
    expect(events.text()).toContain('event: access-ended');
  });
});
