// Share links and file requests through the API and with curl, against a real share (PostgreSQL, MinIO): who may
// make, see and revoke links (admin, user, API keys, anonymous); a link never outlives its creator's permission;
// expiry, use limit and revocation end access; passwords with `curl -u x:PASS`, wrong ones throttled; paths that try
// to leave the shared folder refused in the error envelope; the activity in GET /events and on /metrics.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, createKey, createUser, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const run = promisify(execFile);
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

let test: TestShare;
let alice: { authorization: string; password: string };

interface ShareView {
  id: string;
  url: string;
  state: string;
  uses: number;
  last_used_at: string | null;
  kind: string;
}

async function makeLink(body: Record<string, unknown>, authorization = adminAuth): Promise<ShareView> {
  const response = await postJson(test.url, '/api/shares', body, authorization);
  if (response.status !== 201) throw new Error(`creating a link: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { data: { share: ShareView } }).data.share;
}

/** curl as a user runs it: status, headers and body. */
async function curl(args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await run('curl', ['-sS', '-w', '\n%{http_code}', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).then(
    (r) => r,
    (error: { stdout: string }) => ({ stdout: error.stdout }),
  );
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

const envelopeError = (body: string) => {
  const json = JSON.parse(body) as { success: boolean; message: string };
  expect(json.success).toBe(false);
  expect(typeof json.message).toBe('string');
  return json;
};

beforeAll(async () => {
  test = await startTestShare({
    storage: 's3',
    overrides: { shares: { password_failures_per_link: 3, password_failures_per_address: 50, password_window_seconds: 120 } },
  });
  alice = await createUser(test.url, 'alice', 'user');
  for (const [path, content] of Object.entries({
    '/team/report.txt': 'quarterly report\n',
    '/team/sub/notes.md': '# notes\n',
    '/team2/secret.txt': 'not shared\n',
    '/top.txt': 'top\n',
  })) {
    expect((await upload(test.url, path, content, adminAuth)).status).toBe(201);
  }
  await postJson(test.url, '/team/folders', { folderName: 'inbox' }, adminAuth);
});
afterAll(() => test?.close());

describe('the management API', () => {
  it('lets users and keys make links within what they hold, and refuses the rest', async () => {
    expect((await postJson(test.url, '/api/shares', { path: '/team' })).status).toBe(401);
    // A user may delegate downloads and uploads, which its role holds.
    expect((await makeLink({ path: '/team' }, alice.authorization)).kind).toBe('share');
    expect((await makeLink({ path: '/team/inbox', kind: 'request' }, alice.authorization)).kind).toBe('request');
    // A key with downloads only may not make a file request (uploads), and a scoped key nothing outside its folder.
    const reader = await createKey(test.url, adminAuth, { name: 'reader', permissions: ['downloads'], scope: '/team' });
    const readerAuth = `Bearer ${reader.token}`;
    expect((await postJson(test.url, '/api/shares', { path: '/team/inbox', kind: 'request' }, readerAuth)).status).toBe(403);
    expect((await postJson(test.url, '/api/shares', { path: '/team2' }, readerAuth)).status).toBe(403);
    expect((await makeLink({ path: '/team/report.txt' }, readerAuth)).url).toMatch(/\/-\/s\/[A-Za-z0-9_-]{22}\/report\.txt$/);
    // Bad input: a missing entry, a request on a file, an expiry past the maximum, a short password.
    expect((await postJson(test.url, '/api/shares', { path: '/nope' }, adminAuth)).status).toBe(404);
    expect((await postJson(test.url, '/api/shares', { path: '/team/report.txt', kind: 'request' }, adminAuth)).status).toBe(400);
    expect((await postJson(test.url, '/api/shares', { path: '/team', expires_in_seconds: 91 * 86400 }, adminAuth)).status).toBe(400);
    expect((await postJson(test.url, '/api/shares', { path: '/team', password: 'short' }, adminAuth)).status).toBe(400);
    expect((await postJson(test.url, '/api/shares', { path: '/team/../team2' }, adminAuth)).status).toBe(400);
  });

  it('shows and revokes a link for its creator and admins only', async () => {
    const link = await makeLink({ path: '/team' }, alice.authorization);
    const bob = await createUser(test.url, 'bob', 'user');
    expect((await fetch(`${test.url}/api/shares/${link.id}`, { headers: { authorization: bob.authorization } })).status).toBe(404);
    expect((await fetch(`${test.url}/api/shares/${link.id}`, { method: 'DELETE', headers: { authorization: bob.authorization } })).status).toBe(404);
    expect((await fetch(`${test.url}/api/shares?all=true`, { headers: { authorization: alice.authorization } })).status).toBe(403);
    const all = (await (await fetch(`${test.url}/api/shares?all=true`, { headers: { authorization: adminAuth } })).json()) as { data: { shares: ShareView[] } };
    expect(all.data.shares.map((s) => s.id)).toContain(link.id);
    const own = (await (await fetch(`${test.url}/api/shares`, { headers: { authorization: bob.authorization } })).json()) as { data: { shares: ShareView[] } };
    expect(own.data.shares).toEqual([]);
    const revoked = await fetch(`${test.url}/api/shares/${link.id}`, { method: 'DELETE', headers: { authorization: alice.authorization } });
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as { data: { share: ShareView } }).data.share.state).toBe('revoked');
  });
});

describe('using a link', () => {
  it('downloads with curl -u x:PASS (Range too); no or a wrong password gets 401', async () => {
    const link = await makeLink({ path: '/team/report.txt', password: 'correct horse' });
    const ok = await curl(['-u', 'x:correct horse', link.url]);
    expect(ok.status).toBe(200);
    expect(ok.body).toBe('quarterly report\n');
    const range = await curl(['-u', 'anyone:correct horse', '-r', '0-8', link.url]);
    expect([range.status, range.body]).toEqual([206, 'quarterly']);
    expect((await curl([link.url])).status).toBe(401);
    const wrong = await curl(['-u', 'x:wrong password', link.url]);
    expect(wrong.status).toBe(401);
    envelopeError(wrong.body);
  });

  it('throttles wrong passwords per link on every replica: past the limit even the right one waits (429, Retry-After)', async () => {
    const link = await makeLink({ path: '/team/report.txt', password: 'right password' });
    // A second replica on the same database: the guesses made on either count for both.
    const replica = await startTestShare({
      storage: 's3',
      databaseUrl: test.databaseUrl,
      bucket: test.bucket!,
      sessionSecret: test.config.session.secret,
      overrides: { shares: { password_failures_per_link: 3 } },
    });
    try {
      const onOther = link.url.replace(test.url, replica.url);
      const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`x:${password}`).toString('base64')}` });
      for (let i = 0; i < 3; i++) expect((await fetch(i % 2 ? onOther : link.url, { headers: basic(`guess ${i}`) })).status).toBe(401);
      const throttled = await fetch(onOther, { headers: basic('right password') });
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await fetch(link.url, { headers: basic('right password') })).status).toBe(429);
    } finally {
      await replica.close();
    }
    // Another link is not affected by this one's guesses.
    const other = await makeLink({ path: '/team/report.txt', password: 'right password' });
    expect((await curl(['-u', 'x:right password', other.url])).status).toBe(200);
  });

  it('ends access at expiry, at the use limit and at revocation (410); listings are not uses', async () => {
    const soon = await makeLink({ path: '/team/report.txt', expires_at: new Date(Date.now() + 1500).toISOString() });
    expect((await curl([soon.url])).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1700));
    const expired = await curl([soon.url]);
    expect(expired.status).toBe(410);
    expect(envelopeError(expired.body).message).toMatch(/expired/);

    const limited = await makeLink({ path: '/team', max_uses: 2 });
    for (let i = 0; i < 3; i++) expect((await curl(['-H', 'Accept: application/json', limited.url])).status).toBe(200);
    expect((await curl([`${limited.url}report.txt`])).status).toBe(200);
    expect((await curl([`${limited.url}sub/notes.md`])).status).toBe(200);
    const exhausted = await curl([`${limited.url}report.txt`]);
    expect(exhausted.status).toBe(410);
    expect(envelopeError(exhausted.body).message).toMatch(/used/);
    const view = (await (await fetch(`${test.url}/api/shares/${limited.id}`, { headers: { authorization: adminAuth } })).json()) as {
      data: { share: ShareView };
    };
    expect(view.data.share).toMatchObject({ uses: 2, state: 'exhausted' });
    expect(view.data.share.last_used_at).not.toBeNull();

    // Concurrent downloads never take more uses than the limit (one conditional UPDATE per use).
    const raced = await makeLink({ path: '/team/report.txt', max_uses: 3 });
    const statuses = await Promise.all(Array.from({ length: 8 }, () => fetch(raced.url).then(async (r) => (await r.arrayBuffer(), r.status))));
    expect(statuses.sort()).toEqual([200, 200, 200, 410, 410, 410, 410, 410]);

    const revocable = await makeLink({ path: '/team' });
    expect((await curl([`${revocable.url}report.txt`])).status).toBe(200);
    expect((await fetch(`${test.url}/api/shares/${revocable.id}`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
    expect((await curl([`${revocable.url}report.txt`])).status).toBe(410);
    expect((await curl([revocable.url])).status).toBe(410);
    // A browser is told so on a page, without the envelope.
    const page = await fetch(revocable.url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(410);
    expect(await page.text()).toContain('This link has been revoked.');
  });

  it('never reaches outside the shared folder: .., encoded and double-encoded variants, empty segments (400, envelope)', async () => {
    const link = await makeLink({ path: '/team' });
    const base = link.url.slice(0, -1);
    for (const attack of [
      '/../team2/secret.txt',
      '/%2e%2e/team2/secret.txt',
      '/..%2fteam2%2fsecret.txt',
      '/%252e%252e/team2/secret.txt',
      '/sub/..%5c..%5cteam2',
      '//team2/secret.txt',
      '/%00',
      '/.%2e/top.txt',
    ]) {
      const answer = await curl(['--path-as-is', `${base}${attack}`]);
      expect(answer.status, attack).toBe(400);
      expect(answer.body).not.toContain('not shared');
      envelopeError(answer.body);
    }
    // A sibling whose name starts like the shared folder's is not inside it; an unknown token is 404.
    expect((await curl([`${base}2/secret.txt`])).status).toBe(404);
    expect((await curl([`${test.url}/-/s/AAAAAAAAAAAAAAAAAAAAAA/`])).status).toBe(404);
    // Names are relative to the link: the JSON listing never says where the folder sits in the share.
    const listing = JSON.parse((await curl(['-H', 'Accept: application/json', link.url])).body) as { path: string; files: { path: string }[] };
    expect(listing.path).toBe('/');
    expect(listing.files.map((f) => f.path).sort()).toEqual(['/inbox', '/report.txt', '/sub']);
  });

  it("ends a link's power when its creator loses the permission: a key narrowed, a user deleted", async () => {
    const key = await createKey(test.url, adminAuth, { name: 'maker', permissions: ['downloads', 'uploads'] });
    const byKey = await makeLink({ path: '/team' }, `Bearer ${key.token}`);
    expect((await curl([`${byKey.url}report.txt`])).status).toBe(200);
    const narrowed = await fetch(`${test.url}/api/api-keys/${key.id}`, {
      method: 'PUT',
      headers: { authorization: adminAuth, 'content-type': 'application/json' },
      body: JSON.stringify({ permissions: ['uploads'] }),
    });
    expect(narrowed.status).toBe(200);
    expect((await curl([`${byKey.url}report.txt`])).status).toBe(410);

    const carol = await createUser(test.url, 'carol', 'user');
    const byCarol = await makeLink({ path: '/team/report.txt' }, carol.authorization);
    expect((await curl([byCarol.url])).status).toBe(200);
    const users = (await (await fetch(`${test.url}/api/users`, { headers: { authorization: adminAuth } })).json()) as {
      data: { users: { id: string; username: string }[] };
    };
    const carolId = users.data.users.find((u) => u.username === 'carol')!.id;
    await test.share.pool.query((await import('slonik')).sql.unsafe`update users set disabled_at = now() where id = ${carolId}::uuid`);
    expect((await curl([byCarol.url])).status).toBe(410);
  });
});

describe('file requests', () => {
  it('takes anonymous uploads (curl -F and --data-binary) and refuses listing, download and overwrite', async () => {
    const link = await makeLink({ path: '/team/inbox', kind: 'request', max_uses: 3, max_file_bytes: 1024 });
    const multipart = await run('sh', ['-c', `printf 'hello from outside\\n' | curl -sS -w '\\n%{http_code}' -F 'file=@-;filename=hello.txt' '${link.url}'`], {
      encoding: 'utf8',
    });
    expect(multipart.stdout.trim().split('\n').at(-1)).toBe('201');
    const raw = await run(
      'sh',
      ['-c', `printf 'raw bytes' | curl -sS -w '\\n%{http_code}' -H 'Content-Type: application/octet-stream' --data-binary @- '${link.url}raw.bin'`],
      { encoding: 'utf8' },
    );
    expect(raw.stdout.trim().split('\n').at(-1)).toBe('201');
    // The owner finds them, with their checksums.
    const inbox = (await (await fetch(`${test.url}/team/inbox/?format=json`, { headers: { authorization: adminAuth } })).json()) as {
      files: { name: string; checksum: string }[];
    };
    expect(Object.fromEntries(inbox.files.map((f) => [f.name, f.checksum]))).toMatchObject({
      'hello.txt': sha256('hello from outside\n'),
      'raw.bin': sha256('raw bytes'),
    });
    // No listing, no download, no overwrite, no subfolder, nothing over the size limit.
    expect((await curl(['-H', 'Accept: application/json', link.url])).status).toBe(403);
    expect((await curl([`${link.url}hello.txt`])).status).toBe(403);
    const overwrite = await run('sh', ['-c', `printf 'evil' | curl -sS -w '\\n%{http_code}' -F 'file=@-;filename=hello.txt' '${link.url}'`], {
      encoding: 'utf8',
    });
    expect(overwrite.stdout.trim().split('\n').at(-1)).toBe('409');
    const deeper = await run('sh', ['-c', `printf 'x' | curl -sS -w '\\n%{http_code}' -F 'file=@-;filename=x.txt' '${link.url}sub/'`], { encoding: 'utf8' });
    expect(deeper.stdout.trim().split('\n').at(-1)).toBe('403');
    const big = await run('sh', ['-c', `head -c 2048 /dev/zero | curl -sS -w '\\n%{http_code}' -F 'file=@-;filename=big.bin' '${link.url}'`], {
      encoding: 'utf8',
    });
    expect(big.stdout.trim().split('\n').at(-1)).toBe('413');
    expect(await fetch(`${test.url}/team/inbox/hello.txt`, { headers: { authorization: adminAuth } }).then((r) => r.text())).toBe('hello from outside\n');
    // Refused uploads gave their use back: one more lands, then the request is used up.
    expect((await upload(test.url, link.url.slice(test.url.length), 'third', '', 'third.txt')).status).toBe(201);
    const fourth = await upload(test.url, link.url.slice(test.url.length), 'fourth', '', 'fourth.txt');
    expect(fourth.status).toBe(410);
    const detail = (await (await fetch(`${test.url}/api/shares/${link.id}`, { headers: { authorization: adminAuth } })).json()) as {
      data: { arrivals: { path: string }[] };
    };
    expect(detail.data.arrivals.map((a) => a.path).sort()).toEqual(['/team/inbox/hello.txt', '/team/inbox/raw.bin', '/team/inbox/third.txt']);
  });

  it('refuses uploads through a share link (read-only)', async () => {
    const link = await makeLink({ path: '/team' });
    expect((await upload(test.url, link.url.slice(test.url.length), 'x', '', 'x.txt')).status).toBe(403);
  });
});

describe('activity', () => {
  it('is in the event stream and on /metrics', async () => {
    const link = await makeLink({ path: '/team' });
    expect((await curl([`${link.url}report.txt`])).status).toBe(200);
    await fetch(`${test.url}/api/shares/${link.id}`, { method: 'DELETE', headers: { authorization: adminAuth } });
    const request = await makeLink({ path: '/team/inbox', kind: 'request' });
    expect((await upload(test.url, request.url.slice(test.url.length), 'arrived', '', 'arrived.txt')).status).toBe(201);

    const controller = new AbortController();
    const response = await fetch(`${test.url}/events`, { headers: { authorization: adminAuth, 'last-event-id': '0' }, signal: controller.signal });
    const reader = response.body!.getReader();
    let text = '';
    const deadline = Date.now() + 10_000;
    while (!text.includes('arrived.txt') && Date.now() < deadline) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const events = text.split('\n\n').filter((frame) => frame.includes(link.id) || frame.includes('arrived.txt'));
    expect(events.some((e) => e.includes('event: share-created'))).toBe(true);
    expect(events.some((e) => e.includes('event: share-used') && e.includes('"use":"download"'))).toBe(true);
    expect(events.some((e) => e.includes('event: share-revoked'))).toBe(true);
    expect(text).toMatch(/event: request-upload\ndata: \{[^\n]*"filePath":"\/team\/inbox\/arrived.txt"/);
    // The token never appears in events.
    expect(text).not.toContain(link.url.split('/-/s/')[1]!.slice(0, 22));

    const metrics = await (await fetch(test.share.metricsUrl)).text();
    expect(metrics).toMatch(/boxyard_file_share_link_actions_total\{[^}]*kind="share"[^}]*action="created"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/boxyard_file_share_link_actions_total\{[^}]*kind="request"[^}]*action="upload"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/boxyard_file_share_link_refusals_total\{[^}]*reason="wrong-password"[^}]*\} [1-9]/);
  });
});
