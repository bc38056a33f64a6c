// Search (`vagrant cloud search`, GET /api/v1/search) lists boxes with a released file and sorts by downloads. Both
// are kept per box (migration 0010) instead of computed over the whole catalogue per request; these tests hold
// them true as the tree changes: a release, a revoke, a deleted file, a download, a deleted version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

/** The URL of a `Link` header's rel="next" entry. */
const nextOf = (link: string | null) =>
  link
    ?.split(', ')
    .find((entry) => entry.endsWith('>; rel="next"'))
    ?.slice(1, -'>; rel="next"'.length);

describe('publishing API search', () => {
  let service: TestService;
  let key: string;
  let box: Buffer;
  const cloud = (method: string, path: string, json?: unknown) =>
    service.request<any>(method, path, { headers: { authorization: `Bearer ${key}` }, ...(json !== undefined ? { json } : {}) });
  const found = async (query = 'q=find&sort=downloads') => ((await cloud('GET', `/api/v1/search?${query}`)).body.boxes as { tag: string }[]).map((b) => b.tag);

  async function publish(name: string, version: string, release = true): Promise<void> {
    if ((await cloud('GET', `/api/v1/box/acme/${name}`)).status === 404)
      await cloud('POST', '/api/v1/boxes', { box: { username: 'acme', name, is_private: false } });
    await cloud('POST', `/api/v1/box/acme/${name}/versions`, { version: { version } });
    await cloud('POST', `/api/v1/box/acme/${name}/version/${version}/providers`, { provider: { name: 'virtualbox' } });
    const upload = (await cloud('GET', `/api/v1/box/acme/${name}/version/${version}/provider/virtualbox/upload`)).body;
    expect((await fetch(upload.upload_path, { method: 'PUT', body: box })).status).toBe(200);
    if (release) expect((await cloud('PUT', `/api/v1/box/acme/${name}/version/${version}/release`)).body.status).toBe('active');
  }
  const download = async (name: string, version: string) => {
    const metadata = (
      await service.request<{ versions: { version: string; providers: { url: string }[] }[] }>('GET', `/acme/${name}`, {
        headers: { accept: 'application/json' },
      })
    ).body;
    const response = await fetch(metadata.versions.find((v) => v.version === version)!.providers[0]!.url);
    await response.arrayBuffer();
    expect(response.status, `download ${name} ${version}`).toBe(200);
  };

  beforeAll(async () => {
    service = await startTestService();
    await createOrganization(service, 'acme');
    key = (await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } })).body.token;
    box = await makeBox({ metadata: { provider: 'virtualbox' } });
  });
  afterAll(async () => service?.close());

  it('lists a box once a version with a file is released, not before, and not after its only version is revoked', async () => {
    await publish('find-draft', '1.0.0', false);
    expect(await found()).not.toContain('acme/find-draft');
    expect((await cloud('PUT', '/api/v1/box/acme/find-draft/version/1.0.0/release')).body.status).toBe('active');
    expect(await found()).toContain('acme/find-draft');
    expect((await cloud('PUT', '/api/v1/box/acme/find-draft/version/1.0.0/revoke')).body.status).toBe('revoked');
    expect(await found()).not.toContain('acme/find-draft');
  });

  it('a box whose released version loses its provider (and file) leaves the results; a new release brings it back', async () => {
    await publish('find-gone', '1.0.0');
    expect(await found()).toContain('acme/find-gone');
    expect((await cloud('DELETE', '/api/v1/box/acme/find-gone/version/1.0.0/provider/virtualbox')).status).toBe(200);
    expect(await found()).not.toContain('acme/find-gone');
    await publish('find-gone', '1.1.0');
    expect(await found()).toContain('acme/find-gone');
  });

  it('sorts by downloads, counting each download once, including those of a version deleted since', async () => {
    await publish('find-few', '1.0.0');
    await publish('find-many', '1.0.0');
    await publish('find-many', '2.0.0');
    await download('find-few', '1.0.0');
    for (let i = 0; i < 3; i++) await download('find-many', '1.0.0');
    // The count is written after the response: wait until it is there.
    for (
      let i = 0;
      i < 100 &&
      (await service.sql<{ count: string }>("select count from box_downloads d join boxes b on b.id = d.box_id where b.name = 'find-many'"))[0]?.count !== '3';
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    const order = (await found('q=find-&sort=downloads&order=desc')).filter((tag) => tag === 'acme/find-few' || tag === 'acme/find-many');
    expect(order).toEqual(['acme/find-many', 'acme/find-few']);
    expect((await cloud('DELETE', '/api/v1/box/acme/find-many/version/1.0.0')).status).toBe(200);
    const after = (await found('q=find-&sort=downloads&order=desc')).filter((tag) => tag === 'acme/find-few' || tag === 'acme/find-many');
    expect(after).toEqual(['acme/find-many', 'acme/find-few']);
    const asc = (await found('q=find-&sort=downloads&order=asc')).filter((tag) => tag === 'acme/find-few' || tag === 'acme/find-many');
    expect(asc).toEqual(['acme/find-few', 'acme/find-many']);
  });

  it('pages by keyset: following the next links gives the boxes of every page=N in the same order, for each sort and order', async () => {
    const names = ['pager-05', 'pager-02', 'pager-09', 'pager-01', 'pager-10', 'pager-07', 'pager-03', 'pager-11', 'pager-04', 'pager-08', 'pager-06'];
    for (const name of names) await publish(name, '1.0.0');
    await download('pager-04', '1.0.0');
    await download('pager-04', '1.0.0');
    await download('pager-09', '1.0.0');
    await download('pager-02', '1.0.0');
    for (
      let i = 0;
      i < 100 &&
      (
        await service.sql<{ n: number }>(
          "select count(*)::int as n from box_downloads d join boxes b on b.id = d.box_id where b.name like 'pager-%' and d.count > 0",
        )
      )[0]?.n !== 3;
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    const byName = [...names].sort();
    const tagged = (list: string[]) => list.map((name) => `acme/${name}`);
    // Downloaded boxes by count (a tie by name), then the never-downloaded ones by name; asc the other way round.
    const never = byName.filter((n) => !['pager-02', 'pager-04', 'pager-09'].includes(n));
    const expected: Record<string, string[]> = {
      'sort=downloads&order=desc': tagged(['pager-04', 'pager-02', 'pager-09', ...never]),
      'sort=downloads&order=asc': tagged([...never, 'pager-02', 'pager-09', 'pager-04']),
      'sort=created&order=asc': tagged(names),
      'sort=created&order=desc': tagged([...names].reverse()),
    };
    // Pages of 4 and of 2: cursors on both sides of the downloaded / never-downloaded boundary, and on a tie.
    for (const [query, order] of Object.entries(expected)) {
      for (const limit of [4, 2]) {
        const pages = Math.ceil(names.length / limit);
        const byPage: string[] = [];
        for (let page = 1; page <= pages; page++) byPage.push(...(await found(`q=pager-&${query}&limit=${limit}&page=${page}`)));
        expect(byPage, `${query} by page=`).toEqual(order);
        const followed: string[] = [];
        let next: string | undefined = `/api/v1/search?q=pager-&${query}&limit=${limit}`;
        let requests = 0;
        while (next && requests++ < 10) {
          const response = await cloud('GET', next);
          expect(response.status, next).toBe(200);
          followed.push(...(response.body.boxes as { tag: string }[]).map((b) => b.tag));
          next = nextOf(response.headers.get('link'));
        }
        expect(followed, `${query} by next links, ${limit} a page`).toEqual(order);
        expect(requests, query).toBe(pages);
      }
    }
    // v2 pages the same way.
    const v2 = await cloud('GET', '/api/v2/search?q=pager-&sort=created&order=asc&limit=4');
    const link = nextOf(v2.headers.get('link'));
    expect(link).toMatch(/^\/api\/v2\/search\?/);
    expect(((await cloud('GET', link!)).body.boxes as { tag: string }[]).map((b) => b.tag)).toEqual(tagged(names.slice(4, 8)));
  });

  it("shows each result's versions and providers with the values the records have (the native API's, read apart)", async () => {
    await publish('find-same', '1.0.0');
    await publish('find-same', '1.1.0');
    await download('find-same', '1.0.0');
    const native = (path: string) => cloud('GET', `/api/organization/acme/box/find-same${path}`).then((r) => r.body);
    const arch = (await native('/version/1.0.0/provider/virtualbox/architecture'))[0].name;
    // The count is written after the response: wait until it is there.
    for (let i = 0; i < 100 && (await native(`/version/1.0.0/provider/virtualbox/architecture/${arch}/file`)).download_count !== 1; i++)
      await new Promise((r) => setTimeout(r, 50));
    const metadata = (await service.request<any>('GET', '/acme/find-same', { headers: { accept: 'application/json' } })).body;
    for (const api of ['v1', 'v2']) {
      const box = (await cloud('GET', `/api/${api}/search?q=find-same`)).body.boxes.find((b: { tag: string }) => b.tag === 'acme/find-same');
      const record = await native('');
      expect(box, api).toMatchObject({ name: 'find-same', username: 'acme', private: false, created_at: record.created_at, updated_at: record.updated_at });
      expect(box.versions.map((v: { version: string }) => v.version)).toEqual(['1.1.0', '1.0.0']);
      expect(box.current_version.version).toBe('1.1.0');
      for (const version of box.versions) {
        const v = await native(`/version/${version.version}`);
        expect(version).toMatchObject({
          number: v.version_number,
          status: 'active',
          description: v.description,
          created_at: v.created_at,
          updated_at: v.updated_at,
        });
        const p = await native(`/version/${version.version}/provider/virtualbox`);
        const a = (await native(`/version/${version.version}/provider/virtualbox/architecture`))[0];
        const f = await native(`/version/${version.version}/provider/virtualbox/architecture/${a.name}/file`);
        const url = metadata.versions.find((m: { version: string }) => m.version === version.version).providers[0].url;
        expect(version.providers).toEqual([
          {
            name: 'virtualbox',
            hosted: true,
            created_at: p.created_at,
            updated_at: f.updated_at,
            checksum: f.checksum,
            checksum_type: f.checksum_type,
            original_url: null,
            download_url: url,
            url,
            ...(api === 'v2' ? { architecture: a.name, default_architecture: a.default_box } : {}),
          },
        ]);
      }
      expect(box.downloads, api).toBe(1);
      expect(box.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it("refuses a cursor that is not one, or belongs to another sort, in the API's error shape", async () => {
    const bad = await cloud('GET', '/api/v1/search?q=pager-&after=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false });
    expect(bad.body.errors[0]).toContain('after');
    const first = await cloud('GET', '/api/v1/search?q=pager-&sort=created&limit=2');
    const cursor = new URL(nextOf(first.headers.get('link'))!, 'http://x').searchParams.get('after')!;
    expect((await cloud('GET', `/api/v1/search?q=pager-&sort=downloads&limit=2&after=${cursor}`)).status).toBe(400);
    const forged = Buffer.from(JSON.stringify(['created', 'desc', '1e400', 'acme', 'x'])).toString('base64url');
    expect((await cloud('GET', `/api/v1/search?q=pager-&sort=created&after=${forged}`)).status).toBe(400);
  });
});
