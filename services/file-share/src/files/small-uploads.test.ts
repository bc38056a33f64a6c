// What a small upload costs the database (issue 35, small files): its object key comes registered ahead, a small
// raw body is stored before its path is looked up (the commit checks the path under the tree's lock), and with no
// event stream open the events are not read back. The refusals stay what they were: a folder in the way 409,
// replacing without `delete` 403, nothing left behind.
import { randomBytes } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { adminAuth, createKey, eventually, postJson, startTestShare, type TestShare } from '../testing/test-share.ts';

let share: TestShare;
beforeAll(async () => {
  share = await startTestShare({ storage: 'local' });
  expect((await postJson(share.url, '/folders', { folderName: 'small' }, adminAuth)).status).toBe(201);
  expect((await postJson(share.url, '/small/folders', { folderName: 'taken' }, adminAuth)).status).toBe(201);
});
afterAll(() => share?.close());

const put = (path: string, body: Buffer, authorization: string) =>
  fetch(`${share.url}${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/octet-stream' }, body });

/** The statements the share sends through its pool outside transactions while `run` runs (a spy: each still runs). */
async function statementsDuring(run: () => Promise<void>): Promise<string[]> {
  const pool = share.share.pool as any;
  const seen: string[] = [];
  const originals = Object.fromEntries(['any', 'maybeOne', 'one', 'query'].map((method) => [method, pool[method]]));
  for (const [method, original] of Object.entries(originals)) {
    pool[method] = (query: { sql: string }) => {
      seen.push(query.sql.replace(/\s+/g, ' ').trim());
      return original(query);
    };
  }
  try {
    await run();
  } finally {
    Object.assign(pool, originals);
  }
  return seen;
}

it('registers upload keys ahead, many in one commit, each on the garbage list before it is used', async () => {
  const pool = share.share.pool;
  const sweeper = share.share.sweeper;
  const keys = [await sweeper.newUploadKey(), await sweeper.newUploadKey(), await sweeper.newUploadKey()];
  expect(new Set(keys).size).toBe(3);
  const registered = await pool.any(sql.type(z.object({ storage_key: z.string(), delete_after: z.number() }))`
    select storage_key, delete_after from object_garbage where storage_key = any(${sql.array(keys, 'text')})`);
  expect(registered).toHaveLength(3);
  // Registered together: the keys share their commit's time with the rest of their reserve.
  const together = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from object_garbage where delete_after = (select delete_after from object_garbage where storage_key = ${keys[0]!})`);
  expect(together).toBeGreaterThanOrEqual(32);
  expect(new Set(registered.map((r) => r.delete_after)).size).toBe(1);
});

it('stores a small raw upload before looking its path up, reads no events back with no stream open, and refuses as before', async () => {
  const { token } = await createKey(share.url, adminAuth, { name: 'no-delete', permissions: ['downloads', 'uploads'] });
  const keyAuth = `Bearer ${token}`;
  expect((await put('/small/warm.bin', randomBytes(10), keyAuth)).status).toBe(201);
  const statements = await statementsDuring(async () => {
    for (let i = 0; i < 20; i++) expect((await put(`/small/f-${i}.bin`, randomBytes(10 * 1024), keyAuth)).status).toBe(201);
  });
  // No lookup of the path before the bytes (the commit reads it under the lock), no read of the events table.
  expect(statements.filter((text) => text.includes('from entries where path ='))).toEqual([]);
  expect(statements.filter((text) => text.includes('from events where id >'))).toEqual([]);

  // Refused after storing the bytes, with the answers of a refusal before storing them; nothing stays behind.
  const folder = await put('/small/taken', randomBytes(1024), keyAuth);
  expect(folder.status).toBe(409);
  expect(((await folder.json()) as { message: string }).message).toBe('/small/taken is a folder');
  const replace = await put('/small/f-0.bin', randomBytes(1024), keyAuth);
  expect(replace.status).toBe(403);
  expect(((await replace.json()) as { message: string }).message).toBe('/small/f-0.bin exists; replacing a file needs the delete permission');
  const pool = share.share.pool;
  const used = await pool.anyFirst(sql.type(z.object({ storage_key: z.string() }))`select storage_key from entries where kind = 'file'`);
  const { readdir } = await import('node:fs/promises');
  const stored = async () => (await readdir(`${share.localRoot}/objects/files`)).map((name) => `files/${name}`).sort();
  await eventually(async () => JSON.stringify(await stored()) === JSON.stringify([...used].sort()));
});
