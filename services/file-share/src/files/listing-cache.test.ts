// The JSON listing is serialized by PostgreSQL and cached per replica under the folder's listing version: the
// bytes must be what clients always got, and a change made anywhere (another replica, plain SQL) must show in
// the very next listing on every replica. Two replicas of one share on the local driver.
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';
import { adminAuth, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { entryRow } from '../tree/tree-store.ts';
import { entryView } from './file-routes.ts';
import { encodeCursor } from './listing-cursor.ts';

let first: TestShare;
let second: TestShare;
beforeAll(async () => {
  first = await startTestShare({ storage: 'local' });
  second = await startTestShare({ storage: 'local', databaseUrl: first.databaseUrl, localRoot: first.localRoot!, sessionSecret: first.config.session.secret });
});
afterAll(async () => {
  await second?.close();
  await first?.close();
});

const listText = async (replica: TestShare, path: string, query = '') => {
  const response = await fetch(`${replica.url}${path}${query}`, { headers: { authorization: adminAuth, accept: 'application/json' } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return response.text();
};
const names = async (replica: TestShare, path: string) =>
  (JSON.parse(await listText(replica, path)) as { files: { name: string }[] }).files.map((file) => file.name);

/** The body as the route built it before: entryView() objects in the listing schema's key order, JSON.stringify'd. */
async function expectedBody(replica: TestShare, path: string, page: number, limit: number): Promise<string> {
  const pool = replica.share.pool;
  const folderId = await pool.oneFirst(sql.type(z.object({ id: int8 }))`select id from entries where path = ${path}`);
  const total = await pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where parent_id = ${folderId}`);
  const rows = await pool.any(sql.type(entryRow)`
    select id, parent_id, name, path, kind, size, sha256, storage_key, mtime, listing_version::text as listing_version
    from entries where parent_id = ${folderId} order by kind, name limit ${limit + 1} offset ${(page - 1) * limit}`);
  const files = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor({ kind: files.at(-1)!.kind, name: files.at(-1)!.name }) : null;
  return JSON.stringify({ success: true, message: 'Folder listing', path, total, page, limit, next, files: files.map(entryView) });
}

describe('the JSON listing', () => {
  it('is byte for byte the entries as JSON.stringify writes them, on every page and from the cache', async () => {
    for (const name of ['plain.txt', 'quote".txt', 'é-accent.txt', 'emoji-😀.txt', '<tag>&amp;.txt', 'line\u2028sep.txt', 'zero.txt']) {
      expect((await upload(first.url, `/bytes/${encodeURIComponent(name)}`, `content of ${name}`, adminAuth)).status).toBe(201);
    }
    expect((await postJson(first.url, '/bytes/folders', { folderName: 'sub folder' }, adminAuth)).status).toBe(201);
    expect(await listText(first, '/bytes/')).toBe(await expectedBody(first, '/bytes', 1, 1000));
    // Served again from the cache: the same bytes.
    expect(await listText(first, '/bytes/')).toBe(await expectedBody(first, '/bytes', 1, 1000));
    expect(await listText(first, '/bytes/', '?page=2&limit=3')).toBe(await expectedBody(first, '/bytes', 2, 3));
    expect(await listText(first, '/bytes/', '?page=9&limit=3')).toBe(await expectedBody(first, '/bytes', 9, 3));
    expect(await listText(second, '/bytes/sub%20folder/', '?format=json')).toBe(await expectedBody(first, '/bytes/sub folder', 1, 1000));
    expect(await listText(first, '/')).toBe(await expectedBody(first, '/', 1, 1000));
  });

  it('shows an upload, a replacement, a rename and a delete made on another replica in the next listing', async () => {
    await upload(first.url, '/live/a.txt', 'a', adminAuth);
    expect(await names(first, '/live/')).toEqual(['a.txt']);
    expect(await names(second, '/live/')).toEqual(['a.txt']);

    expect((await upload(second.url, '/live/b.txt', 'b', adminAuth)).status).toBe(201);
    expect(await names(first, '/live/')).toEqual(['a.txt', 'b.txt']);

    expect((await upload(second.url, '/live/a.txt', 'a, longer now', adminAuth)).status).toBe(200);
    expect(await listText(first, '/live/')).toBe(await expectedBody(first, '/live', 1, 1000));
    expect(await listText(first, '/live/')).toContain('"size":13');

    expect((await postJson(second.url, '/live/b.txt?action=rename', { newName: 'c.txt' }, adminAuth, 'PUT')).status).toBe(200);
    expect(await names(first, '/live/')).toEqual(['a.txt', 'c.txt']);

    expect((await fetch(`${second.url}/live/a.txt`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
    expect(await names(first, '/live/')).toEqual(['c.txt']);
  });

  it("shows a renamed folder's new paths in its own listing and in its subfolders'", async () => {
    await upload(first.url, '/old/inner/deep.txt', 'deep', adminAuth);
    await upload(first.url, '/old/top.txt', 'top', adminAuth);
    await postJson(first.url, '/old/folders', { folderName: 'empty' }, adminAuth);
    for (const path of ['/old/', '/old/inner/', '/old/empty/']) await listText(first, path); // cached on the first replica
    expect((await postJson(second.url, '/old?action=rename', { newName: 'new' }, adminAuth, 'PUT')).status).toBe(200);
    expect(await listText(first, '/new/')).toBe(await expectedBody(first, '/new', 1, 1000));
    expect(await listText(first, '/new/inner/')).toBe(await expectedBody(first, '/new/inner', 1, 1000));
    expect(await listText(first, '/new/empty/')).toBe(await expectedBody(first, '/new/empty', 1, 1000));
    expect(JSON.parse(await listText(first, '/new/empty/'))).toMatchObject({ path: '/new/empty', total: 0, files: [] });
    expect(await listText(first, '/new/inner/')).toContain('"path":"/new/inner/deep.txt"');
    expect((await fetch(`${first.url}/old/`, { headers: { authorization: adminAuth, accept: 'application/json' } })).status).toBe(404);
  });

  it("shows rows changed by plain SQL, and a deleted and recreated folder's new contents", async () => {
    await upload(first.url, '/sql/one.txt', '1', adminAuth);
    expect(await names(first, '/sql/')).toEqual(['one.txt']);
    // By hand, from a session whose search_path does not name the share's schema.
    const client = new pg.Client({ connectionString: first.databaseUrl });
    await client.connect();
    try {
      await client.query(`update ${client.escapeIdentifier(first.config.database.schema)}.entries set size = 12345 where path = '/sql/one.txt'`);
      expect(JSON.parse(await listText(first, '/sql/'))).toMatchObject({ files: [{ name: 'one.txt', size: 12345 }] });
      await client.query(`
        insert into ${client.escapeIdentifier(first.config.database.schema)}.entries (parent_id, name, path, kind, size, sha256, storage_key)
        select parent_id, 'more.txt', '/sql/more.txt', 'file', 1, sha256, 'files/by-hand' from ${client.escapeIdentifier(first.config.database.schema)}.entries where path = '/sql/one.txt'`);
      expect(await names(second, '/sql/')).toEqual(['more.txt', 'one.txt']);
    } finally {
      await client.end();
    }

    expect((await fetch(`${second.url}/sql/`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
    expect((await fetch(`${first.url}/sql/`, { headers: { authorization: adminAuth, accept: 'application/json' } })).status).toBe(404);
    await upload(second.url, '/sql/two.txt', '2', adminAuth);
    expect(await names(first, '/sql/')).toEqual(['two.txt']);
  });
});
