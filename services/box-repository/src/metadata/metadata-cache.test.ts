// The Vagrant metadata document as replicas serve it from their caches: a strong ETag and 304 on If-None-Match,
// a change made through one replica seen by another (signed-in reads at once; anonymous reads, answered from
// memory, as soon as the notification arrives), download counts not changing the document, and a lost LISTEN
// connection turning the memory layer off (reads then ask the database) until it is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { createBoxPath, createOrganization, startTestService, uploadRaw, type BoxPath, type TestService } from '../testing/test-service.ts';

describe('metadata caching across replicas', () => {
  let a: TestService;
  let b: TestService;
  const first: BoxPath = { org: 'cached', box: 'base', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
  const metadata = (service: TestService, headers: Record<string, string> = {}) => fetch(`${service.url}/cached/base`, { headers });
  const versionsOf = async (response: Response) => ((await response.json()) as { versions: { version: string; description: string }[] }).versions;
  const poll = { timeout: 10_000, interval: 20 };

  beforeAll(async () => {
    a = await startTestService();
    // A second replica: same database, same storage, its own process state (and session secret).
    b = await startTestService({ databaseUrl: a.databaseUrl, localRoot: a.localRoot! });
    await createOrganization(a, 'cached');
    await createBoxPath(a, a.adminToken, first, { isPublic: true });
    expect((await uploadRaw(a, first, await makeBox({ gzip: false }), { token: a.adminToken })).status).toBe(201);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('answers with a strong ETag and 304 Not Modified for If-None-Match, anonymous or signed in', async () => {
    const response = await metadata(b);
    expect(response.status).toBe(200);
    const etag = response.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/); // strong: no W/
    expect(response.headers.get('cache-control')).toBe('public, no-cache');
    for (const headers of [
      { 'if-none-match': etag },
      { 'if-none-match': `W/${etag}` },
      { 'if-none-match': `"other", ${etag}` },
      { 'if-none-match': etag, 'x-access-token': b.adminToken },
    ] as Record<string, string>[]) {
      const revalidated = await metadata(b, headers);
      expect(revalidated.status).toBe(304);
      expect(revalidated.headers.get('etag')).toBe(etag);
      expect(await revalidated.text()).toBe('');
    }
    expect((await metadata(b, { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('shows a new version added on replica A on replica B: signed in at once, anonymous once notified', async () => {
    const before = await metadata(b); // B now holds the document in both layers
    const etag = before.headers.get('etag')!;
    expect((await versionsOf(before)).map((v) => v.version)).toEqual(['1.0.0']);
    const second = { ...first, version: '2.0.0' };
    await createBoxPath(a, a.adminToken, second);
    expect((await uploadRaw(a, second, await makeBox({ gzip: false }), { token: a.adminToken })).status).toBe(201);

    const signedIn = await metadata(b, { 'x-access-token': b.adminToken, 'if-none-match': etag });
    expect(signedIn.status).toBe(200);
    expect((await versionsOf(signedIn)).map((v) => v.version)).toEqual(['2.0.0', '1.0.0']);
    await expect.poll(async () => (await versionsOf(await metadata(b))).map((v) => v.version), poll).toEqual(['2.0.0', '1.0.0']);
    expect((await metadata(b, { 'if-none-match': etag })).status).toBe(200);
    // The writer's own replica shows its change at once, anonymous too.
    const described = await a.request('PUT', '/api/organization/cached/box/base/version/2.0.0', { token: a.adminToken, json: { description: 'second' } });
    expect(described.status).toBe(200);
    expect((await versionsOf(await metadata(a)))[0]!.description).toBe('second');
  });

  it('stops answering anonymous readers of a box made private on another replica', async () => {
    expect((await metadata(b)).status).toBe(200);
    expect((await a.request('PUT', '/api/organization/cached/box/base', { token: a.adminToken, json: { isPublic: false } })).status).toBe(200);
    await expect.poll(async () => (await metadata(b)).status, poll).toBe(401);
    const member = await metadata(b, { 'x-access-token': b.adminToken });
    expect(member.status).toBe(200);
    expect(member.headers.get('cache-control')).toBe('private, no-cache');
    expect((await a.request('PUT', '/api/organization/cached/box/base', { token: a.adminToken, json: { isPublic: true } })).status).toBe(200);
    await expect.poll(async () => (await metadata(b)).status, poll).toBe(200);
  });

  it('keeps the document (and its ETag) when only download counts change', async () => {
    const etag = (await metadata(b)).headers.get('etag');
    const etagOnA = (await metadata(a)).headers.get('etag'); // another host in the download URLs: another document
    const download = await fetch(`${b.url}/cached/boxes/base/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`);
    expect(download.status).toBe(200);
    await download.arrayBuffer();
    await expect.poll(async () => (await a.sql<{ n: string }>('select sum(download_count)::text as n from files'))[0]!.n, poll).not.toBe('0');
    expect((await metadata(b)).headers.get('etag')).toBe(etag);
    expect((await metadata(a)).headers.get('etag')).toBe(etagOnA);
  });

  it('asks the database while its LISTEN connection is down, and trusts memory again once it is back', async () => {
    const cache = b.running.ctx.metadataCache;
    expect((await metadata(b)).status).toBe(200);
    expect(cache.listening).toBe(true);
    // Cut B's listener (as a database failover would); changes made meanwhile send notifications nobody hears.
    await a.sql(
      "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'boxyard-metadata-box_repository' and datname = current_database()",
    );
    await expect.poll(() => cache.listening, poll).toBe(false);
    await a.sql("update versions set description = 'changed unheard' where version_number = '1.0.0'");
    const versions = await versionsOf(await metadata(b));
    expect(versions.find((v) => v.version === '1.0.0')!.description).toBe('changed unheard');
    await expect.poll(() => cache.listening, poll).toBe(true);
    await a.sql("update versions set description = 'heard again' where version_number = '1.0.0'");
    await expect.poll(async () => (await versionsOf(await metadata(b))).find((v) => v.version === '1.0.0')!.description, poll).toBe('heard again');
  });
});
