// Live events with the `eventsource` npm client against two replicas of one share (one database, one bucket):
// checksum-update after an upload, then a forced disconnect, changes made while the client is away, and a
// resume from Last-Event-ID on the OTHER replica with nothing lost and nothing repeated.
import { createHash } from 'node:crypto';
import { EventSource, type FetchLikeResponse } from 'eventsource';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, createKey, createUser, postJson, sharedSecret, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { ignoreError } from '@boxyard/kit';

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

interface Received {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

const EVENT_TYPES = ['checksum-update', 'file-deleted', 'folder-created', 'file-renamed', 'resync'];

let a: TestShare;
let b: TestShare;
beforeAll(async () => {
  const secret = sharedSecret();
  a = await startTestShare({ storage: 's3', sessionSecret: secret, overrides: { events: { heartbeat_seconds: 0.3 } } });
  b = await startTestShare({
    storage: 's3',
    databaseUrl: a.databaseUrl,
    bucket: a.bucket!,
    sessionSecret: secret,
    overrides: { events: { heartbeat_seconds: 0.3 } },
  });
});
afterAll(async () => {
  await a?.close().catch(ignoreError('teardown: already closed'));
  await b?.close();
});

/** An EventSource whose connections go to `target()`, with credentials, and that can be held back. */
function follow(target: () => string, authorization: string, gate?: () => Promise<void>) {
  const received: Received[] = [];
  const connections: { url: string; lastEventId: string | undefined }[] = [];
  const source = new EventSource(`${a.url}/events`, {
    fetch: async (_input, init): Promise<FetchLikeResponse> => {
      if (connections.length > 0 && gate) await gate();
      const url = `${target()}/events`;
      connections.push({ url, lastEventId: init.headers['Last-Event-ID'] ?? (init.headers as Record<string, string>)['last-event-id'] });
      return fetch(url, { ...init, headers: { ...init.headers, authorization } });
    },
  });
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (event: MessageEvent) =>
      received.push({ id: event.lastEventId, type, data: JSON.parse(event.data as string) as Record<string, unknown> }),
    );
  }
  const opened = new Promise<void>((resolve) => source.addEventListener('open', () => resolve(), { once: true }));
  return { source, received, connections, opened };
}

async function until<T>(check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('two replicas', () => {
  it('delivers checksum-update, then resumes from Last-Event-ID on the other replica without loss', async () => {
    const { token } = await createKey(a.url, adminAuth, { name: 'events', permissions: ['downloads'] });
    let target = a.url;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const client = follow(
      () => target,
      `Bearer ${token}`,
      () => gate,
    );
    await client.opened;

    expect((await upload(a.url, '/live/first.txt', 'first', adminAuth)).status).toBe(201);
    const update = await until(() => client.received.find((e) => e.type === 'checksum-update'));
    expect(update.data).toMatchObject({ filePath: '/live/first.txt', checksum: sha256('first'), size: 5 });
    expect(client.received.map((e) => e.type)).toEqual(['folder-created', 'checksum-update']);

    // Forced disconnect: replica A goes away; the client's next connection is held until the changes are made.
    target = b.url;
    await a.close();
    await until(() => (client.source.readyState === client.source.CONNECTING ? true : undefined));
    expect((await upload(b.url, '/live/second.txt', 'second', adminAuth)).status).toBe(201);
    expect((await postJson(b.url, '/live/folders', { folderName: 'sub' }, adminAuth)).status).toBe(201);
    expect((await postJson(b.url, '/live/second.txt?action=rename', { newName: 'renamed.txt' }, adminAuth, 'PUT')).status).toBe(200);
    expect((await fetch(`${b.url}/live/first.txt`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
    release();

    await until(() => (client.received.some((e) => e.type === 'file-deleted') ? true : undefined));
    // And a live event on B after the resume.
    expect((await upload(b.url, '/live/third.txt', 'third', adminAuth)).status).toBe(201);
    await until(() => client.received.find((e) => e.data.filePath === '/live/third.txt'));
    client.source.close();

    expect(client.connections).toHaveLength(2);
    expect(client.connections[1]).toEqual({ url: `${b.url}/events`, lastEventId: update.id });
    expect(client.received.map((e) => [e.type, e.data])).toEqual([
      ['folder-created', { folderPath: '/live' }],
      ['checksum-update', { filePath: '/live/first.txt', checksum: sha256('first'), size: 5, mtime: expect.any(String) }],
      ['checksum-update', { filePath: '/live/second.txt', checksum: sha256('second'), size: 6, mtime: expect.any(String) }],
      ['folder-created', { folderPath: '/live/sub' }],
      ['file-renamed', { oldPath: '/live/second.txt', newPath: '/live/renamed.txt', isDirectory: false }],
      ['file-deleted', { filePath: '/live/first.txt', isDirectory: false }],
      ['checksum-update', { filePath: '/live/third.txt', checksum: sha256('third'), size: 5, mtime: expect.any(String) }],
    ]);
    const ids = client.received.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('on one replica', () => {
  it('only sends events about paths the caller may read', async () => {
    const { token } = await createKey(b.url, adminAuth, { name: 'team only', permissions: ['downloads'], scope: '/team' });
    const client = follow(() => b.url, `Bearer ${token}`);
    await client.opened;
    await upload(b.url, '/other/secret.txt', 'secret', adminAuth);
    await upload(b.url, '/team/shared.txt', 'shared', adminAuth);
    await until(() => client.received.find((e) => e.data.filePath === '/team/shared.txt'));
    client.source.close();
    expect(client.received.map((e) => e.data.filePath ?? e.data.folderPath)).toEqual(['/team', '/team/shared.txt']);
  });

  it('keeps delivering after its LISTEN connection is killed', async () => {
    const client = follow(() => b.url, adminAuth);
    await client.opened;
    await b.share.pool.query(sql.unsafe`
      select pg_terminate_backend(pid) from pg_stat_activity
      where application_name = 'boxyard-file-share-events' and datname = current_database()`);
    await upload(b.url, '/after-kill/file.txt', 'still here', adminAuth);
    await until(() => client.received.find((e) => e.data.filePath === '/after-kill/file.txt'));
    client.source.close();
  });

  it('refuses callers without credentials (401) or without downloads (403)', async () => {
    expect((await fetch(`${b.url}/events`)).status).toBe(401);
    const { token } = await createKey(b.url, adminAuth, { name: 'uploads only', permissions: ['uploads'] });
    const response = await fetch(`${b.url}/events`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ success: false });
  });

  it('sends heartbeats and ends the stream when the key is revoked', async () => {
    const user = await createUser(b.url, 'eve-listener', 'user');
    const { token, id } = await createKey(b.url, user.authorization, { name: 'short', permissions: ['downloads'] });
    const response = await fetch(`${b.url}/events`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes(': heartbeat')) text += new TextDecoder().decode((await reader.read()).value);
    expect((await fetch(`${b.url}/api/api-keys/${id}`, { method: 'DELETE', headers: { authorization: user.authorization } })).status).toBe(200);
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }
  });

  it('tells a client resuming from before the retention window to re-list', async () => {
    await upload(b.url, '/old/one.txt', 'one', adminAuth);
    await b.share.pool.query(sql.unsafe`update events set created_at = now() - interval '3 days'`);
    await b.share.sweeper.sweepNow();
    for (const lastEventId of ['1', '999999999']) {
      const response = await fetch(`${b.url}/events`, { headers: { authorization: adminAuth, 'last-event-id': lastEventId } });
      const reader = response.body!.getReader();
      let text = '';
      while (!text.includes('event: resync')) text += new TextDecoder().decode((await reader.read()).value);
      if (lastEventId !== '1') {
        // After the resync the client goes on from now: a new change reaches it.
        await upload(b.url, '/old/two.txt', 'two', adminAuth);
        while (!text.includes('/old/two.txt')) text += new TextDecoder().decode((await reader.read()).value);
      }
      await reader.cancel();
    }
  });
});

describe('a replica that stops', () => {
  it('ends each stream with a short retry hint instead of cutting it, while its other requests finish', async () => {
    const stopping = await startTestShare({ storage: 's3', databaseUrl: a.databaseUrl, bucket: a.bucket!, sessionSecret: sharedSecret() });
    const response = await fetch(`${stopping.url}/events`, { headers: { authorization: adminAuth } });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes(': connected')) text += new TextDecoder().decode((await reader.read()).value);
    const closed = stopping.close();
    // The stream ends cleanly (done, no reset), after telling the client to come back within half a second.
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('retry: 500\n');
    await closed;
  });
});
