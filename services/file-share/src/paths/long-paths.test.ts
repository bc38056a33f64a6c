// Issue 27 item 14: paths between ~2.7 KB and the 4096-byte limit answered 500 (a PostgreSQL btree index row holds
// at most 2704 bytes), and names that display as something else were accepted. Against the real service.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

let test: TestShare;
beforeAll(async () => (test = await startTestShare({ storage: 'local' })));
afterAll(() => test?.close());

/** Incompressible names (random), so PostgreSQL cannot shrink the index row below its limit. */
const randomName = (bytes: number) => randomBytes(bytes).toString('base64url').slice(0, bytes);

const octetUpload = (path: string, content: string) =>
  fetch(`${test.url}${path}`, { method: 'POST', headers: { authorization: adminAuth, 'content-type': 'application/octet-stream' }, body: content });

describe('long paths', () => {
  it('stores, lists, downloads, renames and deletes a file whose path is just under 4096 bytes', async () => {
    const top = randomName(250);
    const folders = [top, ...Array.from({ length: 15 }, () => randomName(250))];
    const path = `/${folders.join('/')}/${randomName(4096 - folders.length * 251 - 1)}`;
    expect(Buffer.byteLength(path)).toBe(4096);

    const created = await octetUpload(path, 'deep bytes');
    expect(created.status).toBe(201);
    const download = await fetch(`${test.url}${path}`, { headers: { authorization: adminAuth } });
    expect([download.status, await download.text()]).toEqual([200, 'deep bytes']);
    const parent = path.slice(0, path.lastIndexOf('/') + 1);
    const listing = await fetch(`${test.url}${parent}?format=json`, { headers: { authorization: adminAuth } });
    expect(listing.status).toBe(200);
    expect(JSON.stringify(await listing.json())).toContain(path.slice(path.lastIndexOf('/') + 1));

    // The descendants move with their folder (a range scan over long paths), and still within the limit.
    const renamed = randomName(250);
    const rename = await postJson(test.url, `/${top}?action=rename`, { newName: renamed }, adminAuth, 'PUT');
    expect(rename.status).toBe(200);
    const moved = path.replace(`/${top}/`, `/${renamed}/`);
    expect((await fetch(`${test.url}${moved}`, { headers: { authorization: adminAuth } })).status).toBe(200);
    expect((await fetch(`${test.url}${path}`, { headers: { authorization: adminAuth } })).status).toBe(404);
    const search = await postJson(test.url, `/${renamed}/search`, { query: path.slice(path.lastIndexOf('/') + 1) }, adminAuth);
    expect(search.status).toBe(200);
    expect(((await search.json()) as { data: { total: number } }).data.total).toBe(1);

    const removed = await fetch(`${test.url}/${renamed}/`, { method: 'DELETE', headers: { authorization: adminAuth } });
    expect(removed.status).toBe(200);
    expect((await fetch(`${test.url}${moved}`, { headers: { authorization: adminAuth } })).status).toBe(404);
  });

  it('refuses a path over 4096 bytes with 400 in the envelope before it reaches the database', async () => {
    const path = `/${Array.from({ length: 16 }, () => randomName(250)).join('/')}/${randomName(100)}`;
    expect(Buffer.byteLength(path)).toBeGreaterThan(4096);
    const res = await octetUpload(path, 'x');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ success: false, message: 'Invalid path', details: expect.stringContaining('4096 bytes') });
  });
});

describe('names that display as something else', () => {
  it('refuses a right-to-left override in a folder name, an upload filename, a path and a new name', async () => {
    const folder = await postJson(test.url, '/folders', { folderName: 'invoice\u202Etxt.exe' }, adminAuth);
    expect(folder.status).toBe(400);
    expect(await folder.json()).toEqual({ success: false, message: 'Invalid name', details: expect.stringContaining('bidirectional') });

    const file = await upload(test.url, '/', 'x', adminAuth, 'photo\u202Egpj.exe');
    expect(file.status).toBe(400);
    const byPath = await octetUpload(`/${encodeURIComponent('a\u2067b')}.txt`, 'x');
    expect(byPath.status).toBe(400);
    expect(await byPath.json()).toMatchObject({ success: false, details: expect.stringContaining('bidirectional') });

    expect((await octetUpload('/plain.txt', 'x')).status).toBe(201);
    const rename = await postJson(test.url, '/plain.txt?action=rename', { newName: 'plain\u200F.txt' }, adminAuth, 'PUT');
    expect(rename.status).toBe(400);
    expect(await rename.json()).toMatchObject({ success: false, details: expect.stringContaining('bidirectional') });
  });

  it('refuses a Latin word with a Cyrillic look-alike, and a name not in NFC', async () => {
    const lookAlike = await postJson(test.url, '/folders', { folderName: 'p\u0430ypal' }, adminAuth);
    expect(lookAlike.status).toBe(400);
    expect(await lookAlike.json()).toMatchObject({ details: expect.stringContaining('mix') });
    const decomposed = await postJson(test.url, '/folders', { folderName: 'cafe\u0301' }, adminAuth);
    expect(decomposed.status).toBe(400);
    expect(await decomposed.json()).toMatchObject({ details: expect.stringContaining('NFC') });
    expect((await postJson(test.url, '/folders', { folderName: 'café Отчёт' }, adminAuth)).status).toBe(201);
  });
});
