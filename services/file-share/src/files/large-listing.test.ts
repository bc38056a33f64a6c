// A folder larger than one page of its JSON listing: `total` is the folder's count, each page but the last names the
// next one (`next` and `Link: <…>; rel="next"`), and following them reads every entry once, in order, even when
// entries change between pages (keyset paging: a page starts after the previous page's last entry, not at an offset).
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';
import { adminAuth, postJson, startTestShare, type TestShare } from '../testing/test-share.ts';

type Listing = { total: number; page: number; limit: number; next: string | null; files: { name: string; isDirectory: boolean }[] };

const FOLDERS = 1200;
const FILES = 300;
const pad = (n: number) => String(n).padStart(4, '0');
/** Folders first, then files, each by name: the listing order. */
const everyName = [...Array.from({ length: FOLDERS }, (_, i) => `d-${pad(i)}`), ...Array.from({ length: FILES }, (_, i) => `f-${pad(i)}`)];

let share: TestShare;
beforeAll(async () => {
  share = await startTestShare({ storage: 'local' });
  expect((await postJson(share.url, '/folders', { folderName: 'big' }, adminAuth)).status).toBe(201);
  // 1,500 entries in one statement: the listing is what is under test, not 1,500 uploads.
  const pool = share.share.pool;
  const big = await pool.oneFirst(sql.type(z.object({ id: int8 }))`select id from entries where path = '/big'`);
  await pool.query(sql.unsafe`
    insert into entries (parent_id, name, path, kind, size, sha256, storage_key)
    select ${big}::bigint, n, '/big/' || n, 'dir', 0, null, null from (select 'd-' || lpad(i::text, 4, '0') as n from generate_series(0, ${FOLDERS - 1}) i) x
    union all
    select ${big}::bigint, n, '/big/' || n, 'file', 1, repeat('ab', 32), 'files/listing-test-' || n from (select 'f-' || lpad(i::text, 4, '0') as n from generate_series(0, ${FILES - 1}) i) y`);
});
afterAll(() => share?.close());

const get = (path: string, accept = 'application/json') => fetch(`${share.url}${path}`, { headers: { authorization: adminAuth, accept } });
const nextLink = (response: Response) => {
  const link = response.headers.get('link');
  if (!link) return null;
  expect(link).toMatch(/^<\/[^>]+>; rel="next"$/);
  return link.slice(1, link.indexOf('>'));
};

describe('a folder larger than one page (JSON)', () => {
  it('says so: total is the folder count, the page carries next and a Link rel="next"; following Link reads everything once', async () => {
    const first = await get('/big/');
    expect(first.status).toBe(200);
    const page = (await first.json()) as Listing;
    expect(page).toMatchObject({ total: FOLDERS + FILES, page: 1, limit: 1000 });
    expect(page.files).toHaveLength(1000);
    expect(page.next).toEqual(expect.any(String));
    expect(nextLink(first)).toBe(`/big/?after=${page.next}`);

    const names = page.files.map((f) => f.name);
    let url = nextLink(first);
    let pages = 1;
    while (url) {
      const response = await get(url);
      expect(response.status).toBe(200);
      const more = (await response.json()) as Listing;
      expect(more.total).toBe(FOLDERS + FILES);
      names.push(...more.files.map((f) => f.name));
      url = nextLink(response);
      expect(more.next === null).toBe(url === null);
      pages++;
    }
    expect(pages).toBe(2);
    expect(names).toEqual(everyName);
  });

  it('follows `next` with the limit and format kept, and skips nothing when entries go away between pages', async () => {
    const first = await get('/big/?format=json&limit=400', '*/*');
    const page = (await first.json()) as Listing;
    expect(page.files.map((f) => f.name)).toEqual(everyName.slice(0, 400));
    expect(nextLink(first)).toBe(`/big/?format=json&limit=400&after=${page.next}`);
    // An entry of the page already read is deleted: an offset would now skip d-0400.
    expect((await fetch(`${share.url}/big/d-0005/`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
    const second = (await (await get(`/big/?format=json&limit=400&after=${page.next}`)).json()) as Listing;
    expect(second.total).toBe(FOLDERS + FILES - 1);
    expect(second.files.map((f) => f.name)).toEqual(everyName.slice(400, 800));
    // The last page across the folders/files boundary, then no next.
    const names: string[] = [];
    let cursor: string | null = second.next;
    while (cursor) {
      const more = (await (await get(`/big/?limit=400&after=${cursor}`)).json()) as Listing;
      names.push(...more.files.map((f) => f.name));
      cursor = more.next;
    }
    expect(names).toEqual(everyName.slice(800));
  });

  it('refuses a cursor that is not one (400) and a page with a cursor', async () => {
    for (const query of [
      '?after=bm9wZQ',
      '?after=%2F%2F%2F',
      `?after=${Buffer.from('d:a/b').toString('base64url')}`,
      `?after=${Buffer.from('f:a\0b').toString('base64url')}`,
      `?after=${Buffer.from('d:x').toString('base64url')}&page=2`,
    ]) {
      const response = await get(`/big/${query}`);
      expect(response.status, query).toBe(400);
      expect(await response.json()).toMatchObject({ success: false });
    }
  });

  it('a folder that fits one page has next: null and no Link header', async () => {
    expect((await postJson(share.url, '/big/d-0001/folders', { folderName: 'inner' }, adminAuth)).status).toBe(201);
    const response = await get('/big/d-0001/');
    expect(response.headers.get('link')).toBeNull();
    expect(await response.json()).toMatchObject({ total: 1, next: null, files: [{ name: 'inner' }] });
  });
});

describe('numbered pages (`?page=`)', () => {
  // A numbered page skips the entries before it from the listing index alone (tree-store.ts pageStart): each page
  // must still hold exactly the entries an OFFSET gave, across the folders/files boundary, and past the end none.
  it('page N of JSON and HTML holds entries (N-1)*limit … N*limit-1 of the listing order, the last page the rest', async () => {
    const all = ((await (await get('/big/?limit=10000')).json()) as Listing).files.map((f) => f.name);
    expect(all.length).toBeGreaterThan(1400);
    const limit = 300;
    const pages = Math.ceil(all.length / limit);
    for (let page = 1; page <= pages + 1; page++) {
      const expected = all.slice((page - 1) * limit, page * limit);
      const json = (await (await get(`/big/?limit=${limit}&page=${page}`)).json()) as Listing;
      expect(
        json.files.map((f) => f.name),
        `JSON page ${page}`,
      ).toEqual(expected);
      expect(json.total).toBe(all.length);
      const html = await (await get(`/big/?limit=${limit}&page=${page}`, 'text/html')).text();
      expect(
        [...html.matchAll(/<tr data-name="([^"]*)"/g)].map((m) => m[1]),
        `HTML page ${page}`,
      ).toEqual(expected);
    }
    // A page whose first entry is a file while the one before it ends with folders.
    const boundary = all.indexOf('f-0000');
    const json = (await (await get(`/big/?limit=${boundary}&page=2`)).json()) as Listing;
    expect(json.files[0]!.name).toBe('f-0000');
  });
});
