// The HTML listing streamed in chunks (listing-html-stream.ts): a page longer than one chunk lists every entry once,
// in order, escaped; a repeated page comes from the cache with its length, byte for byte the same; a change shows at
// once; and the frame (who is signed in, what they may do) is each viewer's own, never the cached one's.
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';
import { adminAuth, createKey, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { CHUNK_ENTRIES } from './listing-html-stream.ts';

const FOLDERS = 700;
const FILES = CHUNK_ENTRIES + 800;
const pad = (n: number) => String(n).padStart(4, '0');
const HOSTILE = `f-0000 <b>&"'x`;
/** Folders first, then files, each by name in byte order: the listing order. */
const everyName = [
  ...Array.from({ length: FOLDERS }, (_, i) => `d-${pad(i)}`),
  ...[HOSTILE, ...Array.from({ length: FILES - 1 }, (_, i) => `f-${pad(i + 1)}`)].sort(),
];

let share: TestShare;
beforeAll(async () => {
  share = await startTestShare({ storage: 'local' });
  expect((await postJson(share.url, '/folders', { folderName: 'wide' }, adminAuth)).status).toBe(201);
  const pool = share.share.pool;
  const wide = await pool.oneFirst(sql.type(z.object({ id: int8 }))`select id from entries where path = '/wide'`);
  await pool.query(sql.unsafe`
    insert into entries (parent_id, name, path, kind, size, sha256, storage_key)
    select ${wide}::bigint, n, '/wide/' || n, 'dir', 0, null, null from (select 'd-' || lpad(i::text, 4, '0') as n from generate_series(0, ${FOLDERS - 1}) i) x
    union all
    select ${wide}::bigint, n, '/wide/' || n, 'file', 1, repeat('ab', 32), 'files/html-listing-' || n from (select 'f-' || lpad(i::text, 4, '0') as n from generate_series(1, ${FILES - 1}) i) y
    union all
    select ${wide}::bigint, ${HOSTILE}, ${`/wide/${HOSTILE}`}, 'file', 1, repeat('cd', 32), 'files/html-listing-hostile'`);
});
afterAll(() => share?.close());

const page = async (path: string, authorization = adminAuth) => {
  const response = await fetch(`${share.url}${path}`, { headers: { authorization, accept: 'text/html' } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
  return { response, text: await response.text() };
};
const unescape = (text: string) =>
  text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&amp;', '&');
const rowNames = (text: string) => [...text.matchAll(/<tr data-name="([^"]*)" data-kind="(?:dir|file)">/g)].map((m) => unescape(m[1]!));

describe('the HTML listing of a folder longer than one chunk', () => {
  it('lists every entry once, in order, with the name escaped; the page ends as a page does', async () => {
    const { response, text } = await page('/wide/');
    expect(rowNames(text)).toEqual(everyName);
    expect(text).toContain(`<nav id="pages">${everyName.length} entries</nav>`);
    expect(text).toContain('<a href="f-0000%20%3Cb%3E%26%22&#39;x">f-0000 &lt;b&gt;&amp;&quot;&#39;x</a>');
    expect(text).not.toContain('<b>&');
    expect(text).toContain('<tr class="parent"><td class="name"><a href="../">../</a>');
    expect(text.trimEnd().endsWith('</html>')).toBe(true);
    // Rows are one a line, as before streaming: the chunks join with a newline and nothing else.
    expect(text).toContain(`data-name="d-0699" data-kind="dir">`);
    expect(text.split('\n').filter((line) => line.startsWith('<tr data-name=')).length).toBe(everyName.length);
    // The first read of a folder streams (no length known before its end) or comes from the cache: either way complete.
    expect(response.headers.get('content-length') ?? String(Buffer.byteLength(text))).toBe(String(Buffer.byteLength(text)));
  });

  it('answers a repeated page byte for byte the same, with its length; a change shows at once', async () => {
    const first = await page('/wide/?limit=1200&page=2');
    expect(rowNames(first.text)).toEqual(everyName.slice(1200, 2400));
    expect(first.text).toContain(`Page 2 of 3 (${everyName.length} entries)`);
    const again = await page('/wide/?limit=1200&page=2');
    expect(again.text).toBe(first.text);
    expect(again.response.headers.get('content-length')).toBe(String(Buffer.byteLength(first.text)));
    const head = await fetch(`${share.url}/wide/?limit=1200&page=2`, { method: 'HEAD', headers: { authorization: adminAuth, accept: 'text/html' } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(first.text)));
    expect(await head.text()).toBe('');

    const last = await page('/wide/?limit=1200&page=3');
    expect(rowNames(last.text)).toEqual(everyName.slice(2400));
    expect((await upload(share.url, '/wide/', 'new bytes', adminAuth, 'f-9999-new.txt')).status).toBe(201);
    const changed = await page('/wide/?limit=1200&page=3');
    expect(rowNames(changed.text)).toEqual([...everyName.slice(2400), 'f-9999-new.txt']);
  });

  it('gives each viewer their own frame around the same rows', async () => {
    const admin = await page('/wide/');
    expect(admin.text).toContain('id="plain-upload"');
    const { token } = await createKey(share.url, adminAuth, { name: 'reader', permissions: ['downloads'] });
    const reader = await page('/wide/', `Bearer ${token}`);
    expect(reader.text).not.toContain('id="plain-upload"');
    expect(reader.text).toContain('data-can-upload="false"');
    expect(rowNames(reader.text)).toEqual(rowNames(admin.text));
  });
});
