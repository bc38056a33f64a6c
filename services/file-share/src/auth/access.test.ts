// Every route with the credentials that must pass and those that must be refused: anonymous, users, admins,
// sessions (cookie and Bearer), Basic, and API keys (scoped, expiring, minted by keys) — including the
// escalation cases the original got wrong. Missing credentials are 401 with a challenge, missing rights 403.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { ADMIN_PASSWORD, adminAuth, basic, createKey, createUser, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { ignoreError } from '@boxyard/kit';

let test: TestShare;
let url: string;
let alice: { authorization: string; password: string };
let bob: { authorization: string; password: string };
const bearer = (token: string) => `Bearer ${token}`;

beforeAll(async () => {
  test = await startTestShare({ storage: 's3' });
  url = test.url;
  alice = await createUser(url, 'alice', 'user');
  bob = await createUser(url, 'bob', 'user');
  expect((await upload(url, '/docs/readme.txt', 'read me', adminAuth)).status).toBe(201);
  expect((await upload(url, '/team/plan.txt', 'plan', adminAuth)).status).toBe(201);
});
afterAll(() => test?.close());

const get = (path: string, authorization?: string, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { headers: { ...(authorization ? { authorization } : {}), ...headers }, redirect: 'manual' });
const del = (path: string, authorization?: string) => fetch(`${url}${path}`, { method: 'DELETE', headers: authorization ? { authorization } : {} });
const rename = (path: string, newName: string, authorization?: string) => postJson(url, `${path}?action=rename`, { newName }, authorization, 'PUT');

describe('authentication methods', () => {
  it('lists the methods without credentials', async () => {
    const response = await get('/auth/methods');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { success: boolean; data: { methods: { type: string }[]; anonymousRead: boolean } };
    expect(body.data.methods.map((m) => m.type)).toEqual(['api_key', 'session', 'basic']);
    expect(body.data.anonymousRead).toBe(false);
  });

  it('answers missing credentials with 401 and a Basic/Bearer challenge', async () => {
    const attempts: [string, string, unknown?][] = [
      ['GET', '/'],
      ['GET', '/docs/'],
      ['GET', '/docs/readme.txt'],
      ['HEAD', '/docs/readme.txt'],
      ['POST', '/docs/search', { query: 'x' }],
      ['POST', '/docs/folders', { folderName: 'x' }],
      ['PUT', '/docs/readme.txt?action=rename', { newName: 'x.txt' }],
      ['DELETE', '/docs/readme.txt'],
      ['GET', '/events'],
      ['GET', '/api/api-keys'],
      ['POST', '/api/api-keys', { name: 'x', permissions: ['downloads'] }],
      ['GET', '/api/users'],
    ];
    for (const [method, path, body] of attempts) {
      const response = await fetch(`${url}${path}`, {
        method,
        ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      });
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 401 });
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="boxyard file-share".*Bearer/);
      if (method !== 'HEAD') expect(await response.json()).toMatchObject({ success: false, message: 'Authentication required' });
    }
    expect((await upload(url, '/docs/anon.txt', 'x', '')).status).toBe(401);
    // Logging out without a session is harmless.
    const logout = await fetch(`${url}/auth/logout`, { method: 'POST' });
    expect(logout.status).toBe(200);
    expect(await logout.json()).toMatchObject({ success: true, data: { revoked: false } });
  });

  it('refuses wrong Basic credentials, unknown keys and forged tokens with 401', async () => {
    expect((await get('/docs/readme.txt', basic('admin', 'wrong'))).status).toBe(401);
    expect((await get('/docs/readme.txt', basic('nobody', 'x'))).status).toBe(401);
    const unknownKey = await get('/docs/readme.txt', bearer(`bfs_${'0'.repeat(16)}_${'A'.repeat(43)}`));
    expect(unknownKey.status).toBe(401);
    expect(unknownKey.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await get('/docs/readme.txt', bearer('eyJhbGciOiJub25lIn0.e30.'))).status).toBe(401);
    expect((await get('/docs/readme.txt', 'Digest username="admin"')).status).toBe(401);
  });

  it("a failing account lookup while checking a session is the server's failure (5xx), never a silent sign-out (401)", async () => {
    const login = await postJson(url, '/auth/login/basic', { username: 'alice', password: alice.password });
    const { data } = (await login.json()) as { data: { token: string } };
    const cookie = `auth_token=${data.token}`;
    expect((await get('/docs/readme.txt', undefined, { cookie })).status).toBe(200);
    // The users table out of reach (a migration holding it, a broken replica): the lookup itself fails.
    await test.share.pool.query(sql.unsafe`alter table users rename to users_away`);
    try {
      const response = await get('/docs/readme.txt', undefined, { cookie });
      expect(response.status).toBeGreaterThanOrEqual(500);
      expect(await response.text()).not.toMatch(/users|\.ts:\d+/);
    } finally {
      await test.share.pool.query(sql.unsafe`alter table users_away rename to users`);
    }
    expect((await get('/docs/readme.txt', undefined, { cookie })).status).toBe(200);
  });

  it('signs in with a session: cookie (HttpOnly, Secure, SameSite=Strict) and Bearer; logout revokes it', async () => {
    expect((await postJson(url, '/auth/login/basic', { username: 'alice', password: 'wrong' })).status).toBe(401);
    expect((await postJson(url, '/auth/login/basic', { username: 'alice' })).status).toBe(400);
    const login = await postJson(url, '/auth/login/basic', { username: 'ALICE', password: alice.password });
    expect(login.status).toBe(200);
    const body = (await login.json()) as { data: { token: string; tokenType: string; user: { username: string; role: string } } };
    expect(body.data).toMatchObject({ tokenType: 'Bearer', user: { username: 'alice', role: 'user' } });
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^auth_token=[\w.-]+;/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/Secure/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    expect(setCookie).toMatch(/Path=\//i);
    const cookie = `auth_token=${body.data.token}`;
    expect((await get('/docs/readme.txt', undefined, { cookie })).status).toBe(200);
    expect((await get('/docs/readme.txt', bearer(body.data.token))).status).toBe(200);
    // The session is alice's: a user, so no delete.
    expect((await fetch(`${url}/docs/readme.txt`, { method: 'DELETE', headers: { cookie } })).status).toBe(403);

    const logout = await fetch(`${url}/auth/logout`, { method: 'POST', headers: { cookie } });
    expect(logout.status).toBe(200);
    expect(logout.headers.get('set-cookie')).toMatch(/auth_token=;/);
    expect((await get('/docs/readme.txt', bearer(body.data.token))).status).toBe(401);
    // A stale cookie counts as no credentials (so signing in again works), never as the old session.
    expect((await get('/docs/readme.txt', undefined, { cookie })).status).toBe(401);
    expect(
      (
        await fetch(`${url}/auth/login/basic`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'alice', password: alice.password }),
        })
      ).status,
    ).toBe(200);
  });
});

describe('file routes by role', () => {
  it('lets users and admins read; users upload but neither replace nor delete', async () => {
    for (const auth of [adminAuth, alice.authorization]) {
      expect((await get('/docs/', auth, { accept: 'application/json' })).status).toBe(200);
      expect((await get('/docs/readme.txt', auth)).status).toBe(200);
      expect((await postJson(url, '/docs/search', { query: 'read' }, auth)).status).toBe(200);
    }
    expect((await upload(url, '/alice/new.txt', 'mine', alice.authorization)).status).toBe(201);
    expect((await postJson(url, '/alice/folders', { folderName: 'sub' }, alice.authorization)).status).toBe(201);
    const replace = await upload(url, '/alice/new.txt', 'overwrite', alice.authorization);
    expect(replace.status).toBe(403);
    expect(await replace.json()).toMatchObject({ success: false, message: expect.stringContaining('delete permission') });
    expect((await del('/alice/new.txt', alice.authorization)).status).toBe(403);
    expect((await upload(url, '/alice/new.txt', 'overwrite', adminAuth)).status).toBe(200);
    expect((await del('/alice/new.txt', adminAuth)).status).toBe(200);
  });

  it('renaming a file away needs delete too, so a user cannot rename one and upload in its place (was: a user could)', async () => {
    expect((await upload(url, '/shared/report.txt', 'the original', adminAuth)).status).toBe(201);
    const renamed = await rename('/shared/report.txt', 'old-report.txt', alice.authorization);
    expect(renamed.status).toBe(403);
    expect(await renamed.json()).toMatchObject({ success: false, message: 'Insufficient permissions: delete is required' });
    // So the path is still taken and uploading "in its place" is a replacement, which needs delete as well.
    expect((await upload(url, '/shared/report.txt', 'forged', alice.authorization)).status).toBe(403);
    expect(await (await get('/shared/report.txt', alice.authorization)).text()).toBe('the original');
    expect((await get('/shared/old-report.txt', alice.authorization)).status).toBe(404);
    // The same for a folder, e.g. one an API key is limited to: it stays where its key points.
    expect((await rename('/team', 'team-old', alice.authorization)).status).toBe(403);
    expect((await rename('/team', 'team-old', bob.authorization)).status).toBe(403);
    expect(await (await get('/team/plan.txt', adminAuth)).text()).toBe('plan');
    // Keys: uploads alone or delete alone are not enough; both are (inside the key's scope).
    const writer = await createKey(url, adminAuth, { name: 'rename-writer', permissions: ['downloads', 'uploads'] });
    const deleter = await createKey(url, adminAuth, { name: 'rename-deleter', permissions: ['downloads', 'delete'] });
    const both = await createKey(url, adminAuth, { name: 'rename-both', permissions: ['uploads', 'delete'] });
    expect((await rename('/shared/report.txt', 'a.txt', bearer(writer.token))).status).toBe(403);
    expect((await rename('/shared/report.txt', 'a.txt', bearer(deleter.token))).status).toBe(403);
    expect((await rename('/shared/report.txt', 'b.txt', bearer(both.token))).status).toBe(200);
    expect((await rename('/shared/b.txt', 'report.txt', adminAuth)).status).toBe(200);
    expect(await (await get('/shared/report.txt', adminAuth)).text()).toBe('the original');
  });

  it('holds API keys to their permissions and their scope', async () => {
    const reader = await createKey(url, adminAuth, { name: 'reader', permissions: ['downloads'] });
    const writer = await createKey(url, adminAuth, { name: 'writer', permissions: ['uploads'] });
    const deleter = await createKey(url, adminAuth, { name: 'deleter', permissions: ['delete'] });
    const team = await createKey(url, adminAuth, { name: 'team', permissions: ['downloads', 'uploads', 'delete'], scope: '/team' });

    expect((await get('/docs/readme.txt', bearer(reader.token))).status).toBe(200);
    expect((await fetch(`${url}/docs/readme.txt`, { method: 'HEAD', headers: { authorization: bearer(reader.token) } })).status).toBe(200);
    expect((await fetch(`${url}/docs/readme.txt`, { method: 'HEAD', headers: { authorization: bearer(writer.token) } })).status).toBe(403);
    expect((await upload(url, '/docs/by-reader.txt', 'x', bearer(reader.token))).status).toBe(403);
    expect((await postJson(url, '/docs/folders', { folderName: 'r' }, bearer(reader.token))).status).toBe(403);
    expect((await rename('/docs/readme.txt', 'x.txt', bearer(reader.token))).status).toBe(403);
    expect((await del('/docs/readme.txt', bearer(reader.token))).status).toBe(403);

    expect((await get('/docs/readme.txt', bearer(writer.token))).status).toBe(403);
    expect((await postJson(url, '/docs/search', { query: 'read' }, bearer(writer.token))).status).toBe(403);
    expect((await upload(url, '/docs/by-writer.txt', 'x', bearer(writer.token))).status).toBe(201);
    expect((await upload(url, '/docs/by-writer.txt', 'y', bearer(writer.token))).status).toBe(403); // replacing needs delete
    expect((await del('/docs/by-writer.txt', bearer(writer.token))).status).toBe(403);
    expect((await del('/docs/by-writer.txt', bearer(deleter.token))).status).toBe(200);

    expect((await get('/team/plan.txt', bearer(team.token))).status).toBe(200);
    expect((await get('/team/', bearer(team.token), { accept: 'application/json' })).status).toBe(200);
    expect((await get('/', bearer(team.token))).status).toBe(403);
    expect((await get('/docs/readme.txt', bearer(team.token))).status).toBe(403);
    expect((await get('/teamwork/x', bearer(team.token))).status).toBe(403);
    expect((await upload(url, '/docs/x.txt', 'x', bearer(team.token))).status).toBe(403);
    expect((await postJson(url, '/search', { query: 'plan' }, bearer(team.token))).status).toBe(403);
    expect((await postJson(url, '/team/search', { query: 'plan' }, bearer(team.token))).status).toBe(200);
    expect((await upload(url, '/team/notes.txt', 'n', bearer(team.token))).status).toBe(201);
    expect((await rename('/team', 'renamed-team', bearer(team.token))).status).toBe(403);
    expect((await del('/team', bearer(team.token))).status).toBe(403);
    expect((await del('/team/notes.txt', bearer(team.token))).status).toBe(200);
  });

  it('refuses expired keys with 401', async () => {
    const key = await createKey(url, adminAuth, { name: 'soon', permissions: ['downloads'], expires_at: new Date(Date.now() + 60_000).toISOString() });
    expect((await get('/docs/readme.txt', bearer(key.token))).status).toBe(200);
    await test.share.pool.query(sql.unsafe`update api_keys set expires_at = now() - interval '1 second' where id = ${key.id}`);
    // A change made in SQL reaches a key verified moments ago through its notification (api-key-store.ts).
    let expired = await get('/docs/readme.txt', bearer(key.token));
    for (let tries = 0; expired.status === 200 && tries < 20; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expired = await get('/docs/readme.txt', bearer(key.token));
    }
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({ message: 'API key expired' });
  });
});

describe('anonymous reads (public_read)', () => {
  let open: TestShare;
  beforeAll(async () => {
    open = await startTestShare({
      storage: 'local',
      overrides: { public_read: true, rate_limiting: { enabled: true, max_requests: 12, window_seconds: 600 } },
    });
    expect((await upload(open.url, '/pub/file.txt', 'public', adminAuth)).status).toBe(201);
  });
  afterAll(() => open?.close());

  it('lets anyone list and download but nothing else, and rate-limits with RateLimit headers', async () => {
    const listing = await fetch(`${open.url}/pub/`, { headers: { accept: 'application/json' } });
    expect(listing.status).toBe(200);
    expect(listing.headers.get('ratelimit-limit')).toBe('12');
    expect(Number(listing.headers.get('ratelimit-remaining'))).toBeLessThan(12);
    expect(listing.headers.get('ratelimit-reset')).toMatch(/^\d+$/);
    // The event stream too, though it writes its own head.
    const stream = new AbortController();
    const events = await fetch(`${open.url}/events`, { signal: stream.signal });
    expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(events.headers.get('ratelimit-limit')).toBe('12');
    expect(events.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
    stream.abort();
    await events.body?.cancel().catch(ignoreError('teardown: the stream may be closed'));
    expect(await (await fetch(`${open.url}/pub/file.txt`)).text()).toBe('public');
    expect((await upload(open.url, '/pub/anon.txt', 'x', '')).status).toBe(401);
    expect((await fetch(`${open.url}/pub/file.txt`, { method: 'DELETE' })).status).toBe(401);
    expect((await fetch(`${open.url}/api/api-keys`)).status).toBe(401);
    let last: Response | undefined;
    for (let i = 0; i < 15; i++) {
      last = await fetch(`${open.url}/pub/file.txt`);
      if (last.status === 429) break;
    }
    expect(last!.status).toBe(429);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await last!.json()).toMatchObject({ success: false });
    // Health stays reachable for probes.
    expect((await fetch(`${open.url}/health`)).status).toBe(200);
  });
});

describe('users (admins only)', () => {
  it('lets admins create and list users, refuses users, keys and anonymous callers', async () => {
    expect((await get('/api/users', adminAuth)).status).toBe(200);
    expect((await get('/api/users', alice.authorization)).status).toBe(403);
    const adminKey = await createKey(url, adminAuth, { name: 'admin key', permissions: ['downloads', 'uploads', 'delete'] });
    expect((await get('/api/users', bearer(adminKey.token))).status).toBe(403);
    expect((await postJson(url, '/api/users', { username: 'carol', password: 'Carol-Pass-77', role: 'user' }, alice.authorization)).status).toBe(403);
    expect((await postJson(url, '/api/users', { username: 'carol', password: 'Carol-Pass-77', role: 'user' })).status).toBe(401);
    expect((await postJson(url, '/api/users', { username: 'carol', password: 'password', role: 'user' }, adminAuth)).status).toBe(400);
    expect((await postJson(url, '/api/users', { username: 'carol', password: 'Carol-Pass-77', role: 'root' }, adminAuth)).status).toBe(400);
    expect((await postJson(url, '/api/users', { username: 'carol', password: 'Carol-Pass-77', role: 'user' }, adminAuth)).status).toBe(201);
    expect((await postJson(url, '/api/users', { username: 'CAROL', password: 'Carol-Pass-77', role: 'user' }, adminAuth)).status).toBe(409);
    expect((await get('/docs/readme.txt', basic('carol', 'Carol-Pass-77'))).status).toBe(200);
    expect((await get('/docs/readme.txt', basic('admin', ADMIN_PASSWORD))).status).toBe(200);
  });
});

describe('API keys: no escalation', () => {
  it('lets users create download-only keys and nothing more', async () => {
    const ok = await postJson(url, '/api/api-keys', { name: 'mine', permissions: ['downloads'] }, alice.authorization);
    expect(ok.status).toBe(201);
    const created = (await ok.json()) as { data: { token: string; key: Record<string, unknown> } };
    expect(created.data.token).toMatch(/^bfs_[0-9a-f]{16}_[\w-]{43}$/);
    expect(created.data.key).toMatchObject({ name: 'mine', permissions: ['downloads'], scope: '/', expires_at: null });
    expect(created.data.key).not.toHaveProperty('token');
    for (const permissions of [['uploads'], ['downloads', 'uploads'], ['delete']]) {
      const refused = await postJson(url, '/api/api-keys', { name: 'more', permissions }, alice.authorization);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ success: false });
    }
    expect((await postJson(url, '/api/api-keys', { name: 'x', permissions: ['admin'] }, alice.authorization)).status).toBe(400);
    expect((await postJson(url, '/api/api-keys', { name: 'x', permissions: [] }, alice.authorization)).status).toBe(400);
    expect(
      (await postJson(url, '/api/api-keys', { name: 'x', permissions: ['downloads'], expires_at: '2001-01-01T00:00:00Z' }, alice.authorization)).status,
    ).toBe(400);
    expect((await postJson(url, '/api/api-keys', { name: 'x', permissions: ['downloads'], expires_at: 'tomorrow' }, alice.authorization)).status).toBe(400);
    expect((await postJson(url, '/api/api-keys', { name: 'x', permissions: ['downloads'], scope: '/../etc' }, alice.authorization)).status).toBe(400);
    expect((await postJson(url, '/api/api-keys', { name: 'x', permissions: ['downloads'] })).status).toBe(401);
  });

  it('never lets a key mint a key with more than it has (permissions, expiry, scope)', async () => {
    const expiry = new Date(Date.now() + 3_600_000);
    const downloadOnly = await createKey(url, adminAuth, {
      name: 'download only',
      permissions: ['downloads'],
      expires_at: expiry.toISOString(),
      scope: '/docs',
    });
    // The original's bug: a download-only key minting an upload+delete key.
    const escalation = await postJson(url, '/api/api-keys', { name: 'evil', permissions: ['downloads', 'uploads', 'delete'] }, bearer(downloadOnly.token));
    expect(escalation.status).toBe(403);
    expect((await postJson(url, '/api/api-keys', { name: 'evil', permissions: ['uploads'] }, bearer(downloadOnly.token))).status).toBe(403);
    expect(
      (
        await postJson(
          url,
          '/api/api-keys',
          { name: 'later', permissions: ['downloads'], expires_at: new Date(Date.now() + 7_200_000).toISOString() },
          bearer(downloadOnly.token),
        )
      ).status,
    ).toBe(403);
    expect((await postJson(url, '/api/api-keys', { name: 'wider', permissions: ['downloads'], scope: '/' }, bearer(downloadOnly.token))).status).toBe(403);
    const child = await postJson(url, '/api/api-keys', { name: 'child', permissions: ['downloads'], scope: '/docs' }, bearer(downloadOnly.token));
    expect(child.status).toBe(201);
    const childKey = ((await child.json()) as { data: { key: { id: string; expires_at: string; created_by_key: string; scope: string }; token: string } }).data;
    expect(childKey.key).toMatchObject({ expires_at: expiry.toISOString(), created_by_key: downloadOnly.id, scope: '/docs' });

    // A key can't edit keys, sees only its own lineage, and revoking it revokes what it minted.
    expect((await postJson(url, `/api/api-keys/${childKey.key.id}`, { permissions: ['downloads', 'uploads'] }, bearer(downloadOnly.token), 'PUT')).status).toBe(
      403,
    );
    const seen = (await (await get('/api/api-keys', bearer(downloadOnly.token))).json()) as { data: { keys: { id: string }[] } };
    expect(seen.data.keys.map((k) => k.id).sort()).toEqual([downloadOnly.id, childKey.key.id].sort());
    expect((await del(`/api/api-keys/${downloadOnly.id}`, bearer(childKey.token))).status).toBe(404);
    expect((await del(`/api/api-keys/${downloadOnly.id}`, bearer(downloadOnly.token))).status).toBe(200);
    expect((await get('/docs/readme.txt', bearer(downloadOnly.token))).status).toBe(401);
    expect((await get('/docs/readme.txt', bearer(childKey.token))).status).toBe(401);
  });

  it('applies the same limits to PUT, and narrowing a key narrows what it minted', async () => {
    const mine = await createKey(url, alice.authorization, { name: 'alice key', permissions: ['downloads'] });
    expect((await postJson(url, `/api/api-keys/${mine.id}`, { permissions: ['downloads', 'uploads'] }, alice.authorization, 'PUT')).status).toBe(403);
    // Not even an admin may give a user's key more than the user's role allows in keys.
    expect((await postJson(url, `/api/api-keys/${mine.id}`, { permissions: ['downloads', 'uploads'] }, adminAuth, 'PUT')).status).toBe(403);
    expect((await postJson(url, `/api/api-keys/${mine.id}`, { name: 'renamed' }, bob.authorization, 'PUT')).status).toBe(404);
    expect((await postJson(url, `/api/api-keys/${mine.id}`, { name: 'renamed' }, undefined, 'PUT')).status).toBe(401);
    const renamed = await postJson(
      url,
      `/api/api-keys/${mine.id}`,
      { name: 'renamed', expires_at: new Date(Date.now() + 86_400_000).toISOString() },
      alice.authorization,
      'PUT',
    );
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ data: { key: { name: 'renamed', permissions: ['downloads'] } } });
    expect((await postJson(url, `/api/api-keys/${mine.id}`, {}, alice.authorization, 'PUT')).status).toBe(400);

    const parent = await createKey(url, adminAuth, { name: 'parent', permissions: ['downloads', 'uploads'] });
    const childToken = await createKey(url, bearer(parent.token), { name: 'child', permissions: ['downloads', 'uploads'] });
    expect((await postJson(url, `/api/api-keys/${childToken.id}`, { permissions: ['downloads', 'uploads', 'delete'] }, adminAuth, 'PUT')).status).toBe(403);
    expect((await postJson(url, `/api/api-keys/${parent.id}`, { permissions: ['downloads'] }, adminAuth, 'PUT')).status).toBe(200);
    expect((await upload(url, '/docs/child.txt', 'x', bearer(childToken.token))).status).toBe(403);
    expect((await get('/docs/readme.txt', bearer(childToken.token))).status).toBe(200);
  });

  it('lists and deletes only the caller’s keys; admins see all with ?all=true', async () => {
    const bobs = await createKey(url, bob.authorization, { name: 'bob key', permissions: ['downloads'] });
    const aliceList = (await (await get('/api/api-keys', alice.authorization)).json()) as { data: { keys: { id: string }[] } };
    expect(aliceList.data.keys.map((k) => k.id)).not.toContain(bobs.id);
    expect((await get('/api/api-keys?all=true', alice.authorization)).status).toBe(403);
    const all = (await (await get('/api/api-keys?all=true', adminAuth)).json()) as { data: { keys: { id: string; owner: string }[] } };
    expect(all.data.keys).toContainEqual(expect.objectContaining({ id: bobs.id, owner: 'bob' }));
    expect((await del(`/api/api-keys/${bobs.id}`, alice.authorization)).status).toBe(404);
    expect((await del(`/api/api-keys/${bobs.id}`)).status).toBe(401);
    expect((await del(`/api/api-keys/${bobs.id}`, bob.authorization)).status).toBe(200);
    expect((await del(`/api/api-keys/${bobs.id}`, bob.authorization)).status).toBe(404);
    expect((await del('/api/api-keys/not-an-id', bob.authorization)).status).toBe(400);
  });
});
