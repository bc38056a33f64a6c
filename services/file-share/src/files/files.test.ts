// Files on the s3 driver, with real clients where users have them (curl), and fetch for the rest. Uploads and
// downloads (ranges, cut-off bodies, streamed parts) run on each of the run's S3 servers (MinIO, SeaweedFS).
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, incompleteUploads, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { uploadInTwoParts } from '@boxyard/test/harness/upload-in-two-parts.ts';
import { ADMIN_PASSWORD, adminAuth, bucketKeys, eventually, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const run = promisify(execFile);
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

let test: TestShare;
let work: string;
beforeAll(async () => {
  test = await startTestShare({ storage: 's3', overrides: { uploads: { max_bytes: 1024 * 1024 } } });
  work = await mkdtemp(join(tmpdir(), 'fs-files-'));
});
afterAll(() => test?.close());

type Listing = {
  success: boolean;
  path: string;
  total: number;
  page: number;
  limit: number;
  files: { name: string; path: string; size: number; checksum: string | null; isDirectory: boolean; mtime: string }[];
};
const listJson = async (path: string, query = '', url = test.url) => {
  const response = await fetch(`${url}${path}${query}`, { headers: { authorization: adminAuth, accept: 'application/json' } });
  expect(response.status).toBe(200);
  return (await response.json()) as Listing;
};

describe.each(s3Servers)('upload and download with curl ($server)', ({ server }) => {
  // This block's own share, on its S3 server (shadows the file's share, which is on MinIO).
  let test: TestShare;
  beforeAll(async () => {
    test = await startTestShare({ storage: 's3', bucket: await createTestBucket('fs', s3Server(server)), overrides: { uploads: { max_bytes: 1024 * 1024 } } });
  });
  afterAll(() => test?.close());

  it('uploads with curl -F, stores the sha256 at once, and serves ranges', async () => {
    const data = randomBytes(300_000);
    const file = join(work, 'data.bin');
    await writeFile(file, data);
    const { stdout } = await run('curl', ['-sS', '-u', `admin:${ADMIN_PASSWORD}`, '-F', `file=@${file}`, '-w', '\n%{http_code}', `${test.url}/curl/data.bin`]);
    const [body, status] = stdout.split('\n');
    expect(status).toBe('201');
    const uploaded = JSON.parse(body!) as { success: boolean; data: { file: { checksum: string; size: number; path: string } } };
    expect(uploaded.success).toBe(true);
    expect(uploaded.data.file).toMatchObject({ checksum: sha256(data), size: data.length, path: '/curl/data.bin' });

    // The listing shows the checksum right away (never "Pending").
    const listing = await listJson('/curl/', '', test.url);
    expect(listing.files).toEqual([expect.objectContaining({ name: 'data.bin', checksum: sha256(data), isDirectory: false, size: data.length })]);

    const out = join(work, 'range.bin');
    const range = await run('curl', ['-sS', '-u', `admin:${ADMIN_PASSWORD}`, '-r', '1000-1999', '-o', out, '-D', '-', `${test.url}/curl/data.bin`]);
    expect(range.stdout).toMatch(/^HTTP\/1\.1 206/);
    expect(range.stdout).toMatch(/content-range: bytes 1000-1999\/300000/i);
    expect((await readFile(out)).equals(data.subarray(1000, 2000))).toBe(true);

    const whole = join(work, 'whole.bin');
    await run('curl', ['-sSf', '-u', `admin:${ADMIN_PASSWORD}`, '-o', whole, `${test.url}/curl/data.bin`]);
    expect(sha256(await readFile(whole))).toBe(sha256(data));

    // Resume a cut download with curl -C.
    await writeFile(join(work, 'partial.bin'), data.subarray(0, 123_456));
    await run('curl', ['-sSf', '-u', `admin:${ADMIN_PASSWORD}`, '-C', '-', '-o', join(work, 'partial.bin'), `${test.url}/curl/data.bin`]);
    expect(sha256(await readFile(join(work, 'partial.bin')))).toBe(sha256(data));
  });

  it('answers HEAD, conditional requests, suffix ranges and 416', async () => {
    await upload(test.url, '/cond/a.txt', 'hello world', adminAuth);
    const head = await fetch(`${test.url}/cond/a.txt`, { method: 'HEAD', headers: { authorization: adminAuth } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('11');
    expect(head.headers.get('etag')).toBe(`"${sha256('hello world')}"`);
    expect(head.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(head.headers.get('accept-ranges')).toBe('bytes');
    expect(head.headers.get('x-content-type-options')).toBe('nosniff');
    const etag = head.headers.get('etag')!;
    expect((await fetch(`${test.url}/cond/a.txt`, { headers: { authorization: adminAuth, 'if-none-match': etag } })).status).toBe(304);
    const suffix = await fetch(`${test.url}/cond/a.txt`, { headers: { authorization: adminAuth, range: 'bytes=-5' } });
    expect(suffix.status).toBe(206);
    expect(await suffix.text()).toBe('world');
    const past = await fetch(`${test.url}/cond/a.txt`, { headers: { authorization: adminAuth, range: 'bytes=50-60' } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */11');
    expect(await past.json()).toMatchObject({ success: false });
    // If-Range with a stale validator: the whole file.
    const stale = await fetch(`${test.url}/cond/a.txt`, { headers: { authorization: adminAuth, range: 'bytes=0-4', 'if-range': '"0000"' } });
    expect(stale.status).toBe(200);
    expect(await stale.text()).toBe('hello world');
    // File metadata as JSON.
    const meta = await fetch(`${test.url}/cond/a.txt?format=json`, { headers: { authorization: adminAuth } });
    expect(await meta.json()).toMatchObject({ success: true, data: { file: { name: 'a.txt', checksum: sha256('hello world') } } });
  });

  it('refuses an upload over uploads.max_bytes with 413 and keeps nothing', async () => {
    const before = await bucketKeys(test);
    const response = await upload(test.url, '/big/too-big.bin', randomBytes(1024 * 1024 + 1), adminAuth);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ success: false });
    expect((await fetch(`${test.url}/big/too-big.bin`, { headers: { authorization: adminAuth } })).status).toBe(404);
    await eventually(async () => JSON.stringify(await bucketKeys(test)) === JSON.stringify(before));
    const exact = await upload(test.url, '/big/exact.bin', randomBytes(1024 * 1024), adminAuth);
    expect(exact.status).toBe(201);
  });

  it('leaves no record and no object when an upload is cut off', async () => {
    const before = await bucketKeys(test);
    const boundary = 'cutoffboundary';
    await new Promise<void>((resolve) => {
      const request = httpRequest(`${test.url}/cut/partial.bin`, {
        method: 'POST',
        headers: { authorization: adminAuth, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(600_000) },
      });
      request.on('error', () => resolve());
      request.on('response', () => resolve());
      request.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="partial.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      request.write(randomBytes(200_000), () => setTimeout(() => request.destroy(), 300));
    });
    await eventually(async () => (await fetch(`${test.url}/cut/partial.bin`, { headers: { authorization: adminAuth } })).status === 404);
    await eventually(async () => JSON.stringify(await bucketKeys(test)) === JSON.stringify(before));
  });

  it('answers malformed multipart bodies with 400 and stores nothing', async () => {
    const before = await bucketKeys(test);
    const send = (contentType: string, body: string) =>
      fetch(`${test.url}/malformed/x.bin`, { method: 'POST', headers: { authorization: adminAuth, 'content-type': contentType }, body });
    const part = (name: string, filename: string) => `--abc\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\n\r\nhello\r\n`;
    const cases: [string, string][] = [
      ['multipart/form-data', 'no boundary'],
      ['multipart/form-data; boundary=abc', 'garbage'],
      ['multipart/form-data; boundary=abc', '--abc\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\ncut short'],
      ['multipart/form-data; boundary=abc', `${part('other', 'a')}--abc--\r\n`],
      ['multipart/form-data; boundary=abc', `${part('file', 'a')}${part('file', 'b')}--abc--\r\n`],
      ['multipart/form-data; boundary=abc', ''],
    ];
    for (const [contentType, body] of cases) {
      const response = await send(contentType, body);
      expect({ body: body.slice(0, 30), status: response.status }).toEqual({ body: body.slice(0, 30), status: 400 });
      expect(await response.json()).toMatchObject({ success: false });
    }
    expect((await fetch(`${test.url}/malformed/x.bin`, { headers: { authorization: adminAuth } })).status).toBe(404);
    await eventually(async () => JSON.stringify(await bucketKeys(test)) === JSON.stringify(before));
  });

  it('replaces a file in one step and removes the old bytes', async () => {
    const first = await upload(test.url, '/replace/r.txt', 'version 1', adminAuth);
    expect(first.status).toBe(201);
    const keysAfterFirst = await bucketKeys(test);
    const second = await upload(test.url, '/replace/r.txt', 'version 2', adminAuth);
    expect(second.status).toBe(200);
    expect(await (await fetch(`${test.url}/replace/r.txt`, { headers: { authorization: adminAuth } })).text()).toBe('version 2');
    await eventually(async () => (await bucketKeys(test)).length === keysAfterFirst.length);
    // Objects are stored under opaque keys, never under the user's names.
    expect((await bucketKeys(test)).every((key) => /^file-share\/files\/[0-9a-f-]{36}$/.test(key))).toBe(true);
  });

  it('puts a file into a folder under its filename when the path is a folder', async () => {
    await postJson(test.url, '/folders', { folderName: 'inbox' }, adminAuth);
    const response = await upload(test.url, '/inbox/', 'mail', adminAuth, 'letter.txt');
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ data: { file: { path: '/inbox/letter.txt' } } });
    const bad = await upload(test.url, '/inbox/', 'x', adminAuth, '..');
    expect(bad.status).toBe(400);
    // A browser's form post (the HTML listing's upload form) is sent back to the listing.
    const form = new FormData();
    form.append('file', new Blob(['from a browser']), 'form.txt');
    const browser = await fetch(`${test.url}/inbox/`, {
      method: 'POST',
      headers: { authorization: adminAuth, accept: 'text/html,*/*;q=0.8' },
      body: form,
      redirect: 'manual',
    });
    expect(browser.status).toBe(303);
    expect(browser.headers.get('location')).toBe('/inbox/');
  });
});

describe.each(s3Servers)('uploads with the bytes as the body (application/octet-stream, as the web console sends them; $server)', ({ server }) => {
  // This block's own share, on its S3 server (shadows the file's share, which is on MinIO).
  let test: TestShare;
  beforeAll(async () => {
    test = await startTestShare({ storage: 's3', bucket: await createTestBucket('fs', s3Server(server)), overrides: { uploads: { max_bytes: 1024 * 1024 } } });
  });
  afterAll(() => test?.close());

  const raw = (path: string, body: Buffer | string, authorization = adminAuth) =>
    fetch(`${test.url}${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/octet-stream', accept: 'application/json' }, body });

  it('stores the body at the URL path (curl --data-binary), creating folders, with the SHA-256', async () => {
    const data = randomBytes(300_000);
    const file = join(work, 'raw.bin');
    await writeFile(file, data);
    const { stdout } = await run('curl', [
      '-sS',
      '-u',
      `admin:${ADMIN_PASSWORD}`,
      '-H',
      'content-type: application/octet-stream',
      '--data-binary',
      `@${file}`,
      `${test.url}/raw/deep/r%C3%A9sum%C3%A9.bin`,
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ success: true, data: { file: { path: '/raw/deep/résumé.bin', size: data.length, checksum: sha256(data) } } });
    expect(
      Buffer.from(await (await fetch(`${test.url}/raw/deep/r%C3%A9sum%C3%A9.bin`, { headers: { authorization: adminAuth } })).arrayBuffer()).equals(data),
    ).toBe(true);
    const empty = await raw('/raw/empty.txt', '');
    expect(empty.status).toBe(201);
    expect(await empty.json()).toMatchObject({ data: { file: { size: 0, checksum: sha256('') } } });
  });

  it('follows the multipart rules: a folder URL, a folder in the way, replacing without delete, the size limit', async () => {
    const before = await bucketKeys(test);
    const folderUrl = await raw('/raw/', 'x');
    expect(folderUrl.status).toBe(400);
    expect(((await folderUrl.json()) as { message: string }).message).toMatch(/names the file in the URL/);
    expect((await raw('/raw/deep', 'x')).status).toBe(409);
    expect((await raw('/raw/empty.txt', 'replaced')).status).toBe(200);
    const over = await raw('/raw/over.bin', randomBytes(1024 * 1024 + 1));
    expect(over.status).toBe(413);
    expect((await fetch(`${test.url}/raw/over.bin`, { headers: { authorization: adminAuth } })).status).toBe(404);
    expect((await raw('/api-docs', 'x')).status).toBe(405);
    expect((await raw('/raw/new.txt', 'x', 'Basic bm9ib2R5Om5vcGU=')).status).toBe(401);
    // Only the replaced and the new bytes changed: nothing of the refused uploads stayed.
    await eventually(async () => (await bucketKeys(test)).length === before.length);
  });

  it('streams a body with a Content-Length into storage as it arrives (not a 16 MiB part at a time)', async () => {
    const big = await startTestShare({
      storage: 's3',
      bucket: await createTestBucket('fs', s3Server(server)),
      overrides: { uploads: { max_bytes: 64 * 1024 * 1024 } },
    });
    try {
      const data = randomBytes(20 * 1024 * 1024); // two parts of 16 MiB, the last one short
      const headers = { authorization: adminAuth, 'content-type': 'application/octet-stream', accept: 'application/json' };
      const answer = await uploadInTwoParts(`${big.url}/raw/streamed.bin`, headers, data, 2 * 1024 * 1024, async () => {
        await expect.poll(() => incompleteUploads(big.bucket!), { timeout: 20_000 }).toHaveLength(1);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 201 /);
      expect(await incompleteUploads(big.bucket!)).toEqual([]);
      const stored = Buffer.from(await (await fetch(`${big.url}/raw/streamed.bin`, { headers: { authorization: adminAuth } })).arrayBuffer());
      expect(sha256(stored)).toBe(sha256(data));
    } finally {
      await big.close();
    }
  });

  it('leaves no record and no object when the body is cut off', async () => {
    const before = await bucketKeys(test);
    await new Promise<void>((resolve) => {
      const request = httpRequest(`${test.url}/raw/cut.bin`, {
        method: 'POST',
        headers: { authorization: adminAuth, 'content-type': 'application/octet-stream', 'content-length': String(600_000) },
      });
      request.on('error', () => resolve());
      request.on('response', () => resolve());
      request.write(randomBytes(200_000), () => setTimeout(() => request.destroy(), 300));
    });
    await eventually(async () => (await fetch(`${test.url}/raw/cut.bin`, { headers: { authorization: adminAuth } })).status === 404);
    await eventually(async () => JSON.stringify(await bucketKeys(test)) === JSON.stringify(before));
  });
});

describe('listings', () => {
  beforeAll(async () => {
    for (const name of ['b.txt', 'A.txt', 'a.txt', 'é.txt']) await upload(test.url, `/list/${encodeURIComponent(name)}`, name, adminAuth);
    await postJson(test.url, '/list/folders', { folderName: 'zdir' }, adminAuth);
    await postJson(test.url, '/list/folders', { folderName: 'Adir' }, adminAuth);
  });

  it('lists folders first, then files, by name in byte order', async () => {
    const listing = await listJson('/list/');
    expect(listing).toMatchObject({ success: true, path: '/list', total: 6, page: 1 });
    expect(listing.files.map((f) => f.name)).toEqual(['Adir', 'zdir', 'A.txt', 'a.txt', 'b.txt', 'é.txt']);
    expect(listing.files[0]).toMatchObject({ path: '/list/Adir', isDirectory: true, checksum: null, size: 0 });
    expect(listing.files[2]).toMatchObject({ path: '/list/A.txt', isDirectory: false, checksum: sha256('A.txt'), size: 5 });
    expect(Number.isNaN(Date.parse(listing.files[2]!.mtime))).toBe(false);
  });

  it('paginates with page and limit, total counting every entry', async () => {
    const second = await listJson('/list/', '?page=2&limit=4');
    expect(second).toMatchObject({ total: 6, page: 2, limit: 4 });
    expect(second.files.map((f) => f.name)).toEqual(['b.txt', 'é.txt']);
    const bad = await fetch(`${test.url}/list/?limit=0`, { headers: { authorization: adminAuth, accept: 'application/json' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ success: false, message: 'Request validation failed' });
  });

  it('serves HTML unless JSON is asked for, with escaped relative links', async () => {
    await postJson(test.url, '/list/folders', { folderName: `<b>"x"&'` }, adminAuth);
    for (const accept of ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', '*/*', 'application/json;q=0.5, text/html']) {
      const response = await fetch(`${test.url}/list/`, { headers: { authorization: adminAuth, accept } });
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain('<a href="a.txt">a.txt</a>');
      expect(html).toContain('<a href="zdir/">zdir/</a>');
      expect(html).toContain('<a href="%C3%A9.txt">é.txt</a>');
      expect(html).toContain(`<a href="%3Cb%3E%22x%22%26&#39;/">&lt;b&gt;&quot;x&quot;&amp;&#39;/</a>`);
      expect(html).not.toContain('<b>"x"');
      // The console's one script is a file of the share; nothing inline.
      expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/-/assets/files.js">']);
      expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/);
      // Tools signed in with Basic are offered no link into the console (wget --mirror would follow it).
      expect(html).not.toContain('<a href="/-/');
    }
    const json = await fetch(`${test.url}/list/?format=json`, { headers: { authorization: adminAuth } });
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    const preferred = await fetch(`${test.url}/list/`, { headers: { authorization: adminAuth, accept: 'text/html;q=0.5, application/json' } });
    expect(preferred.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('redirects a folder without its slash (keeping the query) and 404s missing paths in both forms', async () => {
    const redirect = await fetch(`${test.url}/list?format=json&page=1`, { headers: { authorization: adminAuth }, redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/list/?format=json&page=1');
    const encoded = await fetch(`${test.url}/list/Adir`, { headers: { authorization: adminAuth }, redirect: 'manual' });
    expect(encoded.headers.get('location')).toBe('/list/Adir/');
    const missingJson = await fetch(`${test.url}/list/nope/`, { headers: { authorization: adminAuth, accept: 'application/json' } });
    expect(missingJson.status).toBe(404);
    expect(await missingJson.json()).toMatchObject({ success: false });
    const missingHtml = await fetch(`${test.url}/list/nope/`, { headers: { authorization: adminAuth, accept: 'text/html' } });
    expect(missingHtml.status).toBe(404);
    expect(await missingHtml.text()).toContain('Not found');
    const fileAsFolder = await fetch(`${test.url}/list/a.txt/`, { headers: { authorization: adminAuth } });
    expect(fileAsFolder.status).toBe(404);
  });
});

describe('folders, rename, delete, search', () => {
  it('creates folders, 409 on a taken name, 404 under a missing folder', async () => {
    expect((await postJson(test.url, '/folders', { folderName: 'projects' }, adminAuth)).status).toBe(201);
    expect((await postJson(test.url, '/folders', { folderName: 'projects' }, adminAuth)).status).toBe(409);
    expect((await postJson(test.url, '/missing/folders', { folderName: 'x' }, adminAuth)).status).toBe(404);
    expect((await postJson(test.url, '/projects/folders', { folderName: 'a/b' }, adminAuth)).status).toBe(400);
    expect((await postJson(test.url, '/projects/folders', { name: 'x' }, adminAuth)).status).toBe(400);
    expect((await postJson(test.url, '/folders', { folderName: 'health' }, adminAuth)).status).toBe(400);
  });

  it('renames a folder with its contents in one step', async () => {
    await upload(test.url, '/projects/alpha/docs/readme.md', '# alpha', adminAuth);
    await upload(test.url, '/projects/alpha/main.c', 'int main;', adminAuth);
    const renamed = await postJson(test.url, '/projects/alpha?action=rename', { newName: 'beta' }, adminAuth, 'PUT');
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ success: true, data: { file: { path: '/projects/beta', isDirectory: true }, oldPath: '/projects/alpha' } });
    expect(await (await fetch(`${test.url}/projects/beta/docs/readme.md`, { headers: { authorization: adminAuth } })).text()).toBe('# alpha');
    expect((await fetch(`${test.url}/projects/alpha/main.c`, { headers: { authorization: adminAuth } })).status).toBe(404);
    expect((await listJson('/projects/beta/docs/')).files[0]).toMatchObject({ path: '/projects/beta/docs/readme.md' });
    // Files too, and 409 when the target exists.
    expect((await postJson(test.url, '/projects/beta/main.c?action=rename', { newName: 'main.rs' }, adminAuth, 'PUT')).status).toBe(200);
    await upload(test.url, '/projects/beta/other.txt', 'o', adminAuth);
    expect((await postJson(test.url, '/projects/beta/other.txt?action=rename', { newName: 'main.rs' }, adminAuth, 'PUT')).status).toBe(409);
    expect((await postJson(test.url, '/projects/beta/other.txt?action=move', { newName: 'x' }, adminAuth, 'PUT')).status).toBe(400);
    expect((await postJson(test.url, '/projects/beta/other.txt?action=rename', { newName: '../x' }, adminAuth, 'PUT')).status).toBe(400);
    expect((await postJson(test.url, '/nothing?action=rename', { newName: 'x' }, adminAuth, 'PUT')).status).toBe(404);
  });

  it('searches names and checksums below a folder, never matching on paths', async () => {
    await upload(test.url, '/search/Reports/Q1-Report.pdf', 'q1', adminAuth);
    await upload(test.url, '/search/Reports/notes.txt', 'notes', adminAuth);
    await upload(test.url, '/search/ÉTÉ-photo.jpg', 'summer', adminAuth);
    await upload(test.url, '/elsewhere/report-outside.txt', 'x', adminAuth);
    const byName = (await (await postJson(test.url, '/search/search', { query: 'report' }, adminAuth)).json()) as {
      data: { total: number; files: { path: string }[] };
    };
    // "Reports" (the folder) and Q1-Report.pdf match by name; notes.txt inside Reports does not.
    expect(byName.data.files.map((f) => f.path)).toEqual(['/search/Reports', '/search/Reports/Q1-Report.pdf']);
    const unicode = (await (await postJson(test.url, '/search/search', { query: 'été' }, adminAuth)).json()) as { data: { files: { path: string }[] } };
    expect(unicode.data.files.map((f) => f.path)).toEqual(['/search/ÉTÉ-photo.jpg']);
    const byChecksum = (await (await postJson(test.url, '/search', { query: sha256('notes').slice(0, 12) }, adminAuth)).json()) as {
      data: { files: { path: string; checksum: string }[] };
    };
    expect(byChecksum.data.files).toEqual([expect.objectContaining({ path: '/search/Reports/notes.txt', checksum: sha256('notes') })]);
    const paged = (await (await postJson(test.url, '/search/search', { query: 'r', limit: 1, page: 2 }, adminAuth)).json()) as {
      data: { total: number; files: unknown[] };
    };
    expect(paged.data.files).toHaveLength(1);
    expect((await postJson(test.url, '/search/search', {}, adminAuth)).status).toBe(400);
    expect((await postJson(test.url, '/nowhere/search', { query: 'x' }, adminAuth)).status).toBe(404);
  });

  it('deletes a folder recursively in one step and removes its bytes', async () => {
    const before = (await bucketKeys(test)).length;
    await upload(test.url, '/trash/a/1.txt', '1', adminAuth);
    await upload(test.url, '/trash/a/b/2.txt', '2', adminAuth);
    await upload(test.url, '/trash/3.txt', '3', adminAuth);
    expect((await bucketKeys(test)).length).toBe(before + 3);
    const response = await fetch(`${test.url}/trash`, { method: 'DELETE', headers: { authorization: adminAuth } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true, data: { path: '/trash', isDirectory: true, filesDeleted: 3 } });
    expect((await fetch(`${test.url}/trash/a/1.txt`, { headers: { authorization: adminAuth } })).status).toBe(404);
    await eventually(async () => (await bucketKeys(test)).length === before);
    expect((await fetch(`${test.url}/trash`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(404);
    expect((await fetch(`${test.url}/`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(400);
  });

  it('answers uploads that are neither multipart nor raw bytes with a clear error', async () => {
    const response = await fetch(`${test.url}/x.bin`, { method: 'POST', headers: { authorization: adminAuth, 'content-type': 'text/plain' }, body: 'x' });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ success: false });
    const json = await postJson(test.url, '/x.bin', { a: 1 }, adminAuth);
    expect(json.status).toBe(415);
  });

  it('serves the API description and health', async () => {
    const spec = (await (await fetch(`${test.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining(['/api/api-keys', '/api/api-keys/{id}', '/auth/methods', '/auth/login/basic', '/auth/logout', '/events', '/{*}']),
    );
    expect((await fetch(`${test.url}/api-docs/`)).status).toBe(200);
    expect(await (await fetch(`${test.url}/health/ready`)).json()).toMatchObject({ status: 'ok' });
  });
});
