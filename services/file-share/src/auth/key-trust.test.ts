// A verified API key is trusted for a few seconds without a database read (api-key-store.ts); every change that
// could refuse it must still win: on the replica that made it at once, on another replica as soon as the change's
// notification arrives, and a change made in SQL (the triggers notify) the same way.
import { sql } from 'slonik';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminAuth, createKey, createUser, eventually, postJson, sharedSecret, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

let a: TestShare;
let b: TestShare;
beforeAll(async () => {
  const secret = sharedSecret();
  a = await startTestShare({ storage: 's3', sessionSecret: secret });
  b = await startTestShare({ storage: 's3', databaseUrl: a.databaseUrl, bucket: a.bucket!, sessionSecret: secret });
  expect((await upload(a.url, '/trust/readme.txt', 'hello', adminAuth)).status).toBe(201);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const read = (url: string, token: string) => fetch(`${url}/trust/readme.txt`, { headers: { authorization: `Bearer ${token}` } });
const refusedOn = (url: string, token: string) => eventually(async () => (await read(url, token)).status === 401, 5000);

it('refuses a deleted key at once on the replica that deleted it, and soon on the other', async () => {
  const key = await createKey(a.url, adminAuth, { name: 'deleted', permissions: ['downloads'] });
  expect((await read(a.url, key.token)).status).toBe(200);
  expect((await read(b.url, key.token)).status).toBe(200);
  expect((await fetch(`${a.url}/api/api-keys/${key.id}`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
  expect((await read(a.url, key.token)).status).toBe(401);
  await refusedOn(b.url, key.token);
});

it('applies narrowed permissions at once on the replica that changed them', async () => {
  const key = await createKey(a.url, adminAuth, { name: 'narrowed', permissions: ['downloads', 'uploads'] });
  expect((await upload(a.url, '/trust/one.txt', 'one', `Bearer ${key.token}`)).status).toBe(201);
  expect((await postJson(a.url, `/api/api-keys/${key.id}`, { permissions: ['downloads'] }, adminAuth, 'PUT')).status).toBe(200);
  expect((await upload(a.url, '/trust/two.txt', 'two', `Bearer ${key.token}`)).status).toBe(403);
  expect((await read(a.url, key.token)).status).toBe(200);
});

it('refuses the key of an owner disabled in SQL, and a key expired in SQL, once the change is notified', async () => {
  const user = await createUser(a.url, 'trusting', 'user');
  const owned = await createKey(a.url, user.authorization, { name: 'owned', permissions: ['downloads'] });
  const expiring = await createKey(a.url, adminAuth, { name: 'expiring', permissions: ['downloads'] });
  for (const token of [owned.token, expiring.token]) expect((await read(b.url, token)).status).toBe(200);
  await a.share.pool.query(sql.unsafe`update users set disabled_at = now() where username = 'trusting'`);
  await a.share.pool.query(sql.unsafe`update api_keys set expires_at = now() - interval '1 second' where id = ${expiring.id}`);
  await refusedOn(b.url, owned.token);
  await refusedOn(b.url, expiring.token);
});
