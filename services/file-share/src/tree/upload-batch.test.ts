// Upload commits that arrive together share one transaction (upload-batch.ts); each upload must still land on its
// own: its row with its sha256, its bytes off the garbage list, its one event, or its own refusal, whatever else is
// in its batch. Uploads over HTTP at once (new files, a missing folder, the same path twice, a folder in the way,
// replacing without `delete`), then commits driven straight at the tree to show the grouping and its fallback.
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { pickCaseFoldCollation, createTree } from './tree-store.ts';
import { adminAuth, createKey, postJson, startTestShare, type TestShare } from '../testing/test-share.ts';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
type Listing = { total: number; files: { name: string; path: string; checksum: string | null; isDirectory: boolean }[] };

let share: TestShare;
beforeAll(async () => {
  share = await startTestShare({ storage: 'local' });
  expect((await postJson(share.url, '/folders', { folderName: 'batch' }, adminAuth)).status).toBe(201);
  expect((await postJson(share.url, '/batch/folders', { folderName: 'taken' }, adminAuth)).status).toBe(201);
});
afterAll(() => share?.close());

const put = (path: string, body: Buffer, authorization: string) =>
  fetch(`${share.url}${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/octet-stream' }, body });
const listing = async (path: string) =>
  (await (await fetch(`${share.url}${path}?limit=1000`, { headers: { authorization: adminAuth, accept: 'application/json' } })).json()) as Listing;

it('lands every one of many concurrent uploads with its sha256, and refuses only the ones that must be', async () => {
  const { token } = await createKey(share.url, adminAuth, { name: 'no-delete', permissions: ['downloads', 'uploads'] });
  const keyAuth = `Bearer ${token}`;
  const kept = randomBytes(64);
  expect((await put('/batch/kept.bin', kept, adminAuth)).status).toBe(201);
  const files = Array.from({ length: 60 }, (_, i) => ({ path: `/batch/f-${i}.bin`, body: randomBytes(100 + i) }));
  const deeper = Array.from({ length: 8 }, (_, i) => ({ path: `/batch/new/sub/g-${i}.bin`, body: randomBytes(50) }));
  const twice = [randomBytes(10), randomBytes(11)];
  const answers = await Promise.all([
    ...[...files, ...deeper].map((f) => put(f.path, f.body, keyAuth)),
    ...twice.map((body) => put('/batch/twice.bin', body, adminAuth)), // admin may replace: one 201, one 200
    put('/batch/taken', randomBytes(5), adminAuth), // a folder is in the way
    put('/batch/kept.bin', randomBytes(5), keyAuth), // replacing needs delete
  ]);
  const statuses = answers.map((a) => a.status);
  expect(statuses.slice(0, 68)).toEqual(Array.from({ length: 68 }, () => 201));
  expect(statuses.slice(68, 70).sort()).toEqual([200, 201]);
  expect(statuses.slice(70)).toEqual([409, 403]);
  const bodies = (await Promise.all(answers.slice(0, 68).map((a) => a.json()))) as { data: { file: { path: string; checksum: string } } }[];
  expect(bodies.map((b) => [b.data.file.path, b.data.file.checksum])).toEqual([...files, ...deeper].map((f) => [f.path, sha256(f.body)]));

  const listed = new Map((await listing('/batch/')).files.map((f) => [f.path, f.checksum]));
  for (const f of files) expect(listed.get(f.path)).toBe(sha256(f.body));
  expect(listed.get('/batch/kept.bin')).toBe(sha256(kept));
  expect(twice.map(sha256)).toContain(listed.get('/batch/twice.bin'));
  expect((await listing('/batch/new/sub/')).files.map((f) => f.checksum)).toEqual(deeper.map((f) => sha256(f.body)));
  for (const f of [files[0]!, files[59]!, deeper[7]!]) {
    const got = Buffer.from(await (await fetch(`${share.url}${f.path}`, { headers: { authorization: adminAuth } })).arrayBuffer());
    expect(sha256(got)).toBe(sha256(f.body));
  }

  const pool = share.share.pool;
  // Every committed upload's bytes are off the garbage list; each new or replaced file has exactly one event.
  const stillGarbage = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from object_garbage g join entries e using (storage_key)`);
  expect(stillGarbage).toBe(0);
  const events = await pool.any(sql.type(z.object({ path: z.string(), n: z.number() }))`
    select paths[1] as path, count(*)::int as n from events where name = 'checksum-update' and paths[1] like '/batch/%' group by 1`);
  const perPath = new Map(events.map((e) => [e.path, e.n]));
  for (const f of [...files, ...deeper]) expect(perPath.get(f.path)).toBe(1);
  expect(perPath.get('/batch/twice.bin')).toBe(2);
  expect(perPath.get('/batch/kept.bin')).toBe(1);
});

it('commits concurrent uploads in fewer transactions, and one that breaks the statement fails alone', async () => {
  const pool = share.share.pool;
  const tree = createTree(pool, { eventChannel: 'upload_batch_test', caseFoldCollation: await pickCaseFoldCollation(pool) });
  const commit = (name: string, storageKey: string) =>
    tree.commitUpload({ path: `/batch/direct/${name}`, storageKey, size: 1, sha256: sha256(Buffer.from(name)), userId: null, mayReplace: false });
  await commit('first', `files/test-${randomBytes(8).toString('hex')}`); // the folder exists for the rest
  const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => commit(`d-${i}`, `files/test-${randomBytes(8).toString('hex')}`)));
  expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
  // Each transaction has one now(): fewer distinct commit times than uploads means they were grouped.
  const times = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(distinct created_at)::int as n from events where paths[1] like '/batch/direct/d-%'`);
  expect(times).toBeLessThan(40);

  // In one batch: refusals (a folder in the way, replacing without delete) are their own answers; the rest commit.
  const refusing = (i: number) => (i === 3 ? '/batch/taken' : i === 7 ? '/batch/kept.bin' : `/batch/direct/r-${i}`);
  const refused = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) =>
      tree.commitUpload({
        path: refusing(i),
        storageKey: `files/test-${randomBytes(8).toString('hex')}`,
        size: 1,
        sha256: sha256(Buffer.from([i])),
        userId: null,
        mayReplace: false,
      }),
    ),
  );
  expect(refused.map((r) => (r.status === 'rejected' ? (r.reason as { statusCode: number }).statusCode : 'ok'))).toEqual(
    Array.from({ length: 10 }, (_, i) => (i === 3 ? 409 : i === 7 ? 403 : 'ok')),
  );

  // A key another entry already holds breaks the shared statement (unique storage_key): that upload fails, the
  // others of its batch are committed on their own.
  const used = await pool.oneFirst(sql.type(z.object({ storage_key: z.string() }))`select storage_key from entries where path = '/batch/direct/d-0'`);
  const mixed = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) => commit(`m-${i}`, i === 4 ? used : `files/test-${randomBytes(8).toString('hex')}`)),
  );
  expect(mixed.map((r) => r.status)).toEqual(Array.from({ length: 10 }, (_, i) => (i === 4 ? 'rejected' : 'fulfilled')));
  const names = await pool.anyFirst(sql.type(z.object({ name: z.string() }))`
    select name from entries where path like '/batch/direct/%-%' and name not like 'd-%' order by name`);
  expect(names).toEqual([...['m-0', 'm-1', 'm-2', 'm-3', 'm-5', 'm-6', 'm-7', 'm-8', 'm-9'], ...[0, 1, 2, 4, 5, 6, 8, 9].map((i) => `r-${i}`)]);
});
