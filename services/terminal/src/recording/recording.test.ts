// Recording as a user and an auditor check it: a session's output, read back by Debian's `asciinema cat` (an
// independent asciicast v2 reader), contains what the WebSocket showed; search finds the moment a word showed;
// someone else's recording, a bad search, an unknown id and a seek past the end are refused in the error shape;
// `required` with a store that cannot be written ends the session with close code 4305.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, createTestDatabase, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { CLOSE_CODES } from '../protocol.ts';
import { asciinemaCat } from '../testing/asciinema.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, plain, startTestGateway } from '../testing/test-gateway.ts';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

async function castOf(base: string, id: string, cookie: string, query = ''): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${base}/api/terminal/recordings/${id}/cast${query}`, { headers: { cookie } });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** Waits until the recording's last chunk is stored (the session ended and its recorder finished). */
async function recordingDone(base: string, id: string, cookie: string) {
  for (let i = 0; i < 100; i++) {
    const { json } = await api(base, 'GET', `/api/terminal/recordings/${id}`, { cookie });
    if (json.data?.recording && json.data.recording.state !== 'recording') return json.data.recording;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('recording did not finish');
}

describe('session recording (local backend, local store)', () => {
  let gateway: Gateway;
  let dir: string;
  let admin: string;
  let alice: Awaited<ReturnType<typeof createUser>>;
  let bob: Awaited<ReturnType<typeof createUser>>;
  let sessionId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    gateway = await startTestGateway(await createTestDatabase('terminal_recording'), {
      recording: { mode: 'on', flush_seconds: 0.2 },
      storage: { driver: 'local', root: dir },
    });
    admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    alice = await createUser(gateway.url, admin, 'alice');
    bob = await createUser(gateway.url, admin, 'bob');
    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie: alice.cookie, body: { terminal_cookie: 'rec-1' } });
    expect(started.status).toBe(200);
    sessionId = started.json.data.session.id;
    const client = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie: alice.cookie });
    client.type('echo $((6*7)); echo quokka$((40+2))\r');
    await client.waitFor(/quokka42/);
    // The user was told, before anything else, that the session is recorded.
    expect(client.controls[0]).toMatchObject({ type: 'notice', message: expect.stringContaining('recorded') });
    await client.close();
    await api(gateway.url, 'DELETE', `/api/terminal/sessions/${sessionId}/stop`, { cookie: alice.cookie });
    await recordingDone(gateway.url, sessionId, alice.cookie);
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores asciicast v2 that asciinema cat reads back with what the WebSocket showed', async () => {
    const cast = await castOf(gateway.url, sessionId, alice.cookie);
    expect(cast.status).toBe(200);
    expect(cast.type).toContain('application/x-asciicast');
    const header = JSON.parse(cast.text.split('\n')[0]!);
    expect(header).toMatchObject({ version: 2, width: expect.any(Number), height: expect.any(Number) });
    const file = join(dir, 'session.cast');
    writeFileSync(file, cast.text);
    const shown = plain(await asciinemaCat(file, dir));
    expect(shown.split(/\r?\n/).map((line) => line.trim())).toContain('42');
    expect(shown).toContain('quokka42');
  });

  it("lists recordings: the owner its own, an admin everyone's, another user none of them", async () => {
    const own = await api(gateway.url, 'GET', '/api/terminal/recordings', { cookie: alice.cookie });
    expect(own.json.data.recordings.map((r: { id: string }) => r.id)).toEqual([sessionId]);
    expect(own.json.data.recordings[0]).toMatchObject({ owner: { username: 'alice' }, state: 'complete' });
    const all = await api(gateway.url, 'GET', '/api/terminal/recordings', { cookie: admin });
    expect(all.json.data.recordings.map((r: { id: string }) => r.id)).toContain(sessionId);
    const other = await api(gateway.url, 'GET', '/api/terminal/recordings', { cookie: bob.cookie });
    expect(other.json.data.recordings).toEqual([]);
  });

  it("refuses another user's recording, anonymous callers and unknown ids in the error shape", async () => {
    for (const path of [`/api/terminal/recordings/${sessionId}`, `/api/terminal/recordings/${sessionId}/cast`]) {
      const foreign = await api(gateway.url, 'GET', path, { cookie: bob.cookie });
      expect(foreign.status).toBe(404);
      expect(foreign.json).toMatchObject({ success: false, message: 'Recording does not exist' });
      expect((await api(gateway.url, 'GET', path)).status).toBe(401);
      expect((await fetch(`${gateway.url}${path}`, { headers: { cookie: admin } })).status).toBe(200);
    }
    const unknown = await api(gateway.url, 'GET', '/api/terminal/recordings/3b0c1f4e-8d64-4c51-9f3a-2d5e6b7a8c90', { cookie: admin });
    expect(unknown).toMatchObject({ status: 404, json: { success: false } });
    expect((await api(gateway.url, 'GET', '/api/terminal/recordings/not-a-uuid', { cookie: admin })).status).toBe(400);
    // Page cursors whose id part is no UUID (PostgreSQL refused them: a 500 the fuzzer found).
    for (const path of [
      '/api/terminal/recordings?before=0.000000000000000000000000000000000000',
      '/api/terminal/recordings/search?q=echo&after=0.000000000000000000000000000000000000',
    ]) {
      expect(await api(gateway.url, 'GET', path, { cookie: admin }), path).toMatchObject({ status: 400, json: { success: false } });
    }
  });

  it('seeks: events from a second on, and a seek past the end is refused', async () => {
    const recording = (await api(gateway.url, 'GET', `/api/terminal/recordings/${sessionId}`, { cookie: alice.cookie })).json.data.recording;
    const tail = await castOf(gateway.url, sessionId, alice.cookie, `?from=${recording.duration}`);
    expect(tail.status).toBe(200);
    const times = tail.text
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line)[0] as number);
    expect(times.every((t) => t >= recording.duration)).toBe(true);
    const past = await api(gateway.url, 'GET', `/api/terminal/recordings/${sessionId}/cast?from=${recording.duration + 100}`, { cookie: alice.cookie });
    expect(past.status).toBe(416);
    expect(past.json).toMatchObject({ success: false, message: expect.stringContaining('past the end') });
  });

  it('finds the moment a word showed, for its owner and admins only; refuses unbounded queries', async () => {
    const found = await api(gateway.url, 'GET', '/api/terminal/recordings/search?q=quokka42', { cookie: alice.cookie });
    expect(found.status).toBe(200);
    expect(found.json.data.hits).toHaveLength(1);
    const hit = found.json.data.hits[0];
    expect(hit).toMatchObject({ recording_id: sessionId, owner: { username: 'alice' } });
    // At that second the word is on its way: the events up to it (and one more read) show it.
    const cast = await castOf(gateway.url, sessionId, alice.cookie);
    const upTo = cast.text
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => JSON.parse(line) as [number, string, string])
      .filter(([t, code]) => code === 'o' && t <= hit.at);
    expect(upTo.map(([, , data]) => data).join('')).toContain('quokka42');
    expect((await api(gateway.url, 'GET', '/api/terminal/recordings/search?q=QUOKKA', { cookie: admin })).json.data.hits).toHaveLength(1);
    expect((await api(gateway.url, 'GET', '/api/terminal/recordings/search?q=quokka42', { cookie: bob.cookie })).json.data.hits).toEqual([]);
    for (const q of ['', 'a', '*', 'quo*', 'a%20b', 'x'.repeat(65)]) {
      const refused = await api(gateway.url, 'GET', `/api/terminal/recordings/search?q=${q}`, { cookie: alice.cookie });
      expect(refused.status, q).toBe(400);
      expect(refused.json.success).toBe(false);
    }
    expect((await api(gateway.url, 'GET', '/api/terminal/recordings/search?q=quokka42&limit=1000', { cookie: alice.cookie })).status).toBe(400);
    // Punctuation inside a word is the caller's to choose; none of it is query syntax.
    for (const q of ['a-b', '.-.', '__', 'x.y', '--', 'ab.-', '42']) {
      const answered = await api(gateway.url, 'GET', `/api/terminal/recordings/search?q=${encodeURIComponent(q)}`, { cookie: alice.cookie });
      expect(answered.status, q).toBe(200);
    }
    expect((await api(gateway.url, 'GET', '/api/terminal/recordings/search?q=quokka42')).status).toBe(401);
  });
  it('sweeps recordings and audit rows past their retention, objects included', async () => {
    const objects = async () => {
      const keys: string[] = [];
      for await (const object of gateway.recordings.objects.list(`recordings/${sessionId}/`)) keys.push(object.key);
      return keys;
    };
    expect((await objects()).length).toBeGreaterThan(0);
    await gateway.audit.settle();
    await gateway.app.pool.query(sql.unsafe`update terminal_recordings set expires_at = now() - interval '1 second' where id = ${sessionId}::uuid`);
    await gateway.app.pool.query(sql.unsafe`update terminal_audit set at = now() - interval '31 days' where session_id = ${sessionId}::uuid`);
    expect(await gateway.recordings.sweepOnce()).toBe(1);
    await gateway.audit.sweepOnce();
    expect((await api(gateway.url, 'GET', `/api/terminal/recordings/${sessionId}`, { cookie: admin })).status).toBe(404);
    expect(await objects()).toEqual([]);
    expect((await api(gateway.url, 'GET', `/api/terminal/audit?session_id=${sessionId}`, { cookie: admin })).json.data.events).toEqual([]);
  });
});

describe('recording.max_bytes', () => {
  let gateway: Gateway;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'recordings-cap-'));
    gateway = await startTestGateway(await createTestDatabase('terminal_recording_cap'), {
      recording: { mode: 'required', max_bytes: 65_536, flush_seconds: 0.2 },
      storage: { driver: 'local', root: dir },
    });
  });

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops the recording at the cap with a marker; the session goes on', async () => {
    const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'rec-cap' } });
    const id = started.json.data.session.id;
    const client = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie });
    client.type('head -c 200000 /dev/zero | tr "\\0" y; echo; echo still$((1+1))\r');
    await client.waitFor('still2');
    client.type('echo after$((3+3))\r');
    await client.waitFor('after6');
    const recording = await recordingDone(gateway.url, id, cookie);
    expect(recording).toMatchObject({ state: 'truncated' });
    expect(recording.bytes).toBeLessThanOrEqual(65_536);
    const cast = await castOf(gateway.url, id, cookie);
    expect(JSON.parse(cast.text.trim().split('\n').at(-1)!)).toEqual([expect.any(Number), 'm', expect.stringContaining('size limit')]);
    await client.close();
    await api(gateway.url, 'DELETE', `/api/terminal/sessions/${id}/stop`, { cookie });
  }, 30_000);
});

describe('recording.mode required with a store that cannot be written', () => {
  let gateway: Gateway;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'recordings-bad-'));
    // A file where the store's directory should be: every write fails (also for root).
    writeFileSync(join(dir, 'not-a-directory'), '');
    gateway = await startTestGateway(await createTestDatabase('terminal_recording_required'), {
      recording: { mode: 'required' },
      storage: { driver: 'local', root: join(dir, 'not-a-directory') },
    });
  });

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ends the session with close code 4305 and says why', async () => {
    const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'rec-required' } });
    expect(started.status).toBe(200);
    const client = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie });
    const closed = await client.closed;
    expect(closed).toEqual({ code: CLOSE_CODES.recording_failed, reason: 'recording_failed' });
    expect(client.controls).toContainEqual(expect.objectContaining({ type: 'exit', reason: 'recording_failed' }));
    const session = (await api(gateway.url, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json.data.sessions[0];
    expect(session).toMatchObject({ id: started.json.data.session.id, end_reason: 'recording_failed' });
  }, 30_000);
});

describe.each(s3Servers)("recording into S3 (the run's $server)", ({ server }) => {
  let gateway: Gateway;

  afterAll(async () => {
    await gateway?.close();
  });

  it('stores the chunks as objects and serves the assembled cast', async () => {
    const bucket = await createTestBucket('recordings', s3Server(server));
    gateway = await startTestGateway(await createTestDatabase('terminal_recording_s3'), {
      recording: { mode: 'required', flush_seconds: 0.2 },
      storage: {
        driver: 's3',
        endpoint: bucket.endpoint,
        access_key: bucket.accessKey,
        secret_key: bucket.secretKey,
        bucket: bucket.bucket,
        region: bucket.region,
      },
    });
    const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'rec-s3' } });
    const id = started.json.data.session.id;
    const client = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie });
    client.type('echo $((6*7))\r');
    await client.waitFor(/^42\r?$/m);
    await client.close();
    await api(gateway.url, 'DELETE', `/api/terminal/sessions/${id}/stop`, { cookie });
    await recordingDone(gateway.url, id, cookie);
    const keys: string[] = [];
    for await (const object of bucket.client.listObjectsV2(bucket.bucket, `recordings/${id}/`, true)) keys.push((object as { name: string }).name);
    expect(keys.length).toBeGreaterThan(0);
    const cast = await castOf(gateway.url, id, cookie);
    const output = cast.text
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => JSON.parse(line) as [number, string, string])
      .filter(([, code]) => code === 'o')
      .map(([, , data]) => data)
      .join('');
    expect(plain(output).split(/\r?\n/)).toContain('42');
  }, 40_000);
});
