// Search by name reads the trigram index (0011_name_search_trigrams.sql) instead of every entry, and reads it as a
// LIKE whose wildcards are escaped: a query with `%`, `_` or `\` still matches those characters only, as the plain
// substring test it replaced did. A share of 20,000 entries (rows by SQL, as the listing tests do: search is
// under test, not uploads), enough that PostgreSQL's planner prefers an index to a scan whenever one applies.
import { createHash } from 'node:crypto';
import { sql, type FragmentSqlToken } from 'slonik';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';
import { pickCaseFoldCollation } from '../tree/tree-store.ts';
import { adminAuth, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const sha256Of = (text: string) => createHash('sha256').update(text).digest('hex');
type Found = { data: { total: number; files: { path: string; checksum: string | null }[] } };

let share: TestShare;
const search = async (query: string, path = '/search') => (await (await postJson(share.url, path, { query }, adminAuth)).json()) as Found;

beforeAll(async () => {
  share = await startTestShare({ storage: 'local' });
  expect((await postJson(share.url, '/folders', { folderName: 'many' }, adminAuth)).status).toBe(201);
  const pool = share.share.pool;
  const many = await pool.oneFirst(sql.type(z.object({ id: int8 }))`select id from entries where path = '/many'`);
  await pool.query(sql.unsafe`
    insert into entries (parent_id, name, path, kind, size, sha256, storage_key)
    select ${many}::bigint, n, '/many/' || n, 'file', 1, encode(sha256(convert_to(n, 'UTF8')), 'hex'), 'files/search-test-' || n
    from (select 'item-' || lpad(i::text, 5, '0') || '.bin' as n from generate_series(1, 20000) i) x`);
  await pool.query(sql.unsafe`analyze entries`);
  for (const name of ['100% done.txt', '1000 done.txt', 'a_b.txt', 'axb.txt', 'backslash.txt', 'Ünïcode-Straße.txt']) {
    expect((await upload(share.url, `/odd/${encodeURIComponent(name)}`, name, adminAuth)).status).toBe(201);
  }
});
afterAll(() => share?.close());

it('finds a name substring among 20,000 entries, case-insensitively, with the count of all matches', async () => {
  const found = await search('M-1234');
  expect(found.data.total).toBe(10); // item-12340 … item-12349.bin (item-01234 has "m-0123")
  expect(found.data.files.map((f) => f.path)).toEqual(Array.from({ length: 10 }, (_, i) => `/many/item-1234${i}.bin`));
  expect((await search('straSSE')).data.files.map((f) => f.path)).toEqual([]); // no folding beyond case: ß is not ss
  expect((await search('STRAßE')).data.files.map((f) => f.path)).toEqual(['/odd/Ünïcode-Straße.txt']);
});

it('matches %, _ and \\ in a query as themselves, not as LIKE wildcards', async () => {
  expect((await search('0%')).data.files.map((f) => f.path)).toEqual(['/odd/100% done.txt']);
  expect((await search('a_b')).data.files.map((f) => f.path)).toEqual(['/odd/a_b.txt']);
  // Names hold no backslash (share-path.ts); unescaped, `\\s` would be LIKE's `s` and find backslash.txt.
  expect((await search('a\\sh')).data.files.map((f) => f.path)).toEqual([]);
  expect((await search('%')).data.files.map((f) => f.path)).toEqual(['/odd/100% done.txt']);
});

it('reads a name search from the trigram index and a checksum search from the checksum index, not every entry', async () => {
  const pool = share.share.pool;
  const fold = sql.identifier([await pickCaseFoldCollation(pool)]);
  // With scans priced out: on 20,000 rows a scan may still be the cheaper plan, but this asks whether the indexes
  // apply to the query's expressions at all (at 1,100,000 entries the planner takes them: test/bench/scale-share.ts).
  const explain = (where: FragmentSqlToken) =>
    pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`set local enable_seqscan = off`);
      return (await tx.anyFirst(sql.type(z.object({ 'QUERY PLAN': z.string() }))`explain select id from entries where path <> '/' and (${where})`)).join('\n');
    });
  const nameLike = (query: string) => sql.fragment`lower(name collate ${fold}) like ('%' || lower(${query}::text collate ${fold}) || '%')`;
  const byName = await explain(nameLike('m-1234'));
  expect(byName).toContain('entries_name_trgm');
  expect(byName).not.toContain('Seq Scan');
  const sum = 'ab'.repeat(32);
  const both = await explain(sql.fragment`${nameLike(sum)} or (sha256 >= ${sum} and sha256 < ${`${sum}g`})`);
  expect(both).toContain('entries_name_trgm');
  expect(both).toContain('entries_sha256');
  expect(both).not.toContain('Seq Scan');
  const one = await search(sha256Of('item-04321.bin'));
  expect(one.data.files.map((f) => f.path)).toEqual(['/many/item-04321.bin']);
});

it('finds a file by its whole checksum and by a prefix, and a name holding the digits too, with the total past the last page', async () => {
  const sum = sha256Of('item-07777.bin');
  expect((await upload(share.url, `/named/copy-of-${sum}.txt`, 'not those bytes', adminAuth)).status).toBe(201);
  const both = ['/many/item-07777.bin', `/named/copy-of-${sum}.txt`];
  for (const query of [sum, sum.toUpperCase(), sum.slice(0, 8), sum.slice(0, 40)]) {
    const found = await search(query);
    expect(found.data.files.map((f) => f.path)).toEqual(both);
    expect(found.data.total).toBe(2);
    expect(found.data.files[0]!.checksum).toBe(sum);
  }
  expect((await search(sum, '/many/search')).data.files.map((f) => f.path)).toEqual(['/many/item-07777.bin']);
  const past = (await (await postJson(share.url, '/search', { query: sum, page: 3, limit: 1 }, adminAuth)).json()) as Found;
  expect(past.data).toMatchObject({ total: 2, files: [] });
  expect((await search('no-such-name')).data).toMatchObject({ total: 0, files: [] });
  expect((await postJson(share.url, '/nowhere/search', { query: sum }, adminAuth)).status).toBe(404);
  expect((await postJson(share.url, '/many/item-07777.bin/search', { query: sum }, adminAuth)).status).toBe(404);
});
