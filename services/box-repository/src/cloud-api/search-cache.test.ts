// Search results come from a per-box cache of their JSON (search-document-cache.ts), checked against each box's
// stamp on every search, and a page asked for by number starts where it was found to start (search-positions.ts)
// while the search generation holds. Two replicas on one database: every write through replica A is shown by the
// very next search on replica B (which had the old document or position cached) and on A, and a box made private
// leaves the anonymous results of both at once while its members still find it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { addMember, createOrganization, startTestService, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

interface Result {
  tag: string;
  description: string;
  private: boolean;
  downloads: number;
  current_version: { version: string } | null;
  versions: { version: string; providers: { name: string; checksum: string; architecture?: string }[] }[];
}

describe('search results cached per box, across replicas', () => {
  let a: TestService;
  let b: TestService;
  let key: string;
  let box: Buffer;
  const cloud = (service: TestService, method: string, path: string, json?: unknown) =>
    service.request<any>(method, path, { headers: { authorization: `Bearer ${key}` }, ...(json !== undefined ? { json } : {}) });
  /** The result for `org/name` in each replica's search (as a member, or anonymous), v1 unless said. */
  const results = async (tag: string, options: { anonymous?: boolean; api?: 'v1' | 'v2' } = {}): Promise<(Result | undefined)[]> =>
    Promise.all(
      [b, a].map(async (service) => {
        const path = `/api/${options.api ?? 'v1'}/search?q=${tag.split('/')[1]}`;
        const response = options.anonymous ? await service.request<any>('GET', path) : await cloud(service, 'GET', path);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
        // Download URLs name the replica asked: compared without it.
        const { boxes } = JSON.parse(response.text.replaceAll(service.url, '')) as { boxes: Result[] };
        return boxes.find((r) => r.tag === tag);
      }),
    );
  /** Both replicas' results (URLs without their origin): the same. */
  const both = async (tag: string, options: { anonymous?: boolean; api?: 'v1' | 'v2' } = {}) => {
    const [fromB, fromA] = await results(tag, options);
    expect(fromA).toEqual(fromB);
    return fromB;
  };

  async function publish(name: string, version: string): Promise<void> {
    if ((await cloud(a, 'GET', `/api/v1/box/acme/${name}`)).status === 404)
      await cloud(a, 'POST', '/api/v1/boxes', { box: { username: 'acme', name, is_private: false } });
    await cloud(a, 'POST', `/api/v1/box/acme/${name}/versions`, { version: { version } });
    await cloud(a, 'POST', `/api/v1/box/acme/${name}/version/${version}/providers`, { provider: { name: 'virtualbox' } });
    const upload = (await cloud(a, 'GET', `/api/v1/box/acme/${name}/version/${version}/provider/virtualbox/upload`)).body;
    expect((await fetch(upload.upload_path, { method: 'PUT', body: box })).status).toBe(200);
    expect((await cloud(a, 'PUT', `/api/v1/box/acme/${name}/version/${version}/release`)).body.status).toBe('active');
  }

  beforeAll(async () => {
    a = await startTestService();
    b = await startTestService({ databaseUrl: a.databaseUrl, localRoot: a.localRoot! });
    await createOrganization(a, 'acme');
    key = (await a.request('POST', '/api/service-accounts', { token: a.adminToken, json: { organization: 'acme' } })).body.token;
    box = await makeBox({ metadata: { provider: 'virtualbox' } });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it("shows a version's release, deletion, a provider's rename and a file's new checksum at once on both replicas", async () => {
    await publish('cached-tree', '1.0.0');
    expect((await both('acme/cached-tree'))?.current_version?.version).toBe('1.0.0');
    await publish('cached-tree', '1.1.0');
    expect((await both('acme/cached-tree'))?.versions.map((v) => v.version)).toEqual(['1.1.0', '1.0.0']);
    expect((await cloud(a, 'DELETE', '/api/v1/box/acme/cached-tree/version/1.1.0')).status).toBe(200);
    expect((await both('acme/cached-tree'))?.versions.map((v) => v.version)).toEqual(['1.0.0']);
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/cached-tree/version/1.0.0/provider/virtualbox', { provider: { name: 'libvirt' } })).status).toBe(200);
    expect((await both('acme/cached-tree'))?.versions[0]?.providers.map((p) => p.name)).toEqual(['libvirt']);
    // No route changes a checksum alone; the document shows it, so such a change must be seen too (migration 0012).
    await a.sql(
      "update files set checksum = repeat('0', 64) where architecture_id in (select a.id from architectures a join providers p on p.id = a.provider_id where p.name = 'libvirt')",
    );
    expect((await both('acme/cached-tree'))?.versions[0]?.providers[0]?.checksum).toBe('0'.repeat(64));
    // v2 names architectures: its documents are cached apart from v1's.
    expect((await both('acme/cached-tree', { api: 'v2' }))?.versions[0]?.providers[0]?.architecture).toBeTypeOf('string');
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/cached-tree/version/1.0.0/revoke')).body.status).toBe('revoked');
    expect(await results('acme/cached-tree')).toEqual([undefined, undefined]);
  });

  it("shows a box's new description, its downloads, and its organization's new name at once on both replicas", async () => {
    await publish('cached-box', '1.0.0');
    const first = await both('acme/cached-box');
    expect(first?.downloads).toBe(0);
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/cached-box', { box: { description: 'A new description' } })).status).toBe(200);
    expect((await both('acme/cached-box'))?.description).toBe('A new description');
    const metadata = (await a.request<any>('GET', '/acme/cached-box', { headers: { accept: 'application/json' } })).body;
    const download = await fetch(metadata.versions[0].providers[0].url);
    await download.arrayBuffer();
    expect(download.status).toBe(200);
    // The count is written after the response: wait until it is there.
    for (
      let i = 0;
      i < 100 &&
      (await a.sql<{ n: string }>("select count as n from box_downloads d join boxes b on b.id = d.box_id where b.name = 'cached-box'"))[0]?.n !== '1';
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    expect((await both('acme/cached-box'))?.downloads).toBe(1);
    expect((await a.request('PUT', '/api/organization/acme', { token: a.adminToken, json: { name: 'acme-renamed' } })).status).toBe(200);
    try {
      expect(await results('acme/cached-box')).toEqual([undefined, undefined]);
      expect((await both('acme-renamed/cached-box'))?.current_version?.version).toBe('1.0.0');
    } finally {
      await a.request('PUT', '/api/organization/acme-renamed', { token: a.adminToken, json: { name: 'acme' } });
    }
  });

  it('drops a box made private from the anonymous results of both replicas at once; members still find it, marked private', async () => {
    await publish('cached-private', '1.0.0');
    expect((await both('acme/cached-private', { anonymous: true }))?.private).toBe(false);
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/cached-private', { box: { is_private: true } })).status).toBe(200);
    expect(await results('acme/cached-private', { anonymous: true })).toEqual([undefined, undefined]);
    expect((await both('acme/cached-private'))?.private).toBe(true);
    expect((await cloud(a, 'DELETE', '/api/v1/box/acme/cached-private')).status).toBe(200);
    expect(await results('acme/cached-private')).toEqual([undefined, undefined]);
  });

  it('pages by number as the next links page, on both replicas, right after a release, a download and a box made private', async () => {
    for (const name of ['pos-1', 'pos-2', 'pos-3', 'pos-4', 'pos-5']) await publish(name, '1.0.0');
    const tags = (response: { body: { boxes: Result[] } }) => response.body.boxes.map((r) => r.tag);
    const get = (service: TestService, path: string, anonymous: boolean) => (anonymous ? service.request<any>('GET', path) : cloud(service, 'GET', path));
    /**
     * Every page by page=, the last first (a page keeps where the next one starts: asked in order, each would start
     * from where it was just found), each asked twice (the second from its kept position); and by following next links.
     */
    const pages = async (service: TestService, query: string, anonymous = false) => {
      const byNumber: string[][] = [];
      for (let page = 4; page >= 1; page--) {
        const path = `/api/v1/search?q=pos-&limit=2&${query}&page=${page}`;
        const [first, again] = [tags(await get(service, path, anonymous)), tags(await get(service, path, anonymous))];
        expect(again, path).toEqual(first);
        byNumber.unshift(first);
      }
      const byLink: string[][] = [];
      for (let next: string | undefined = `/api/v1/search?q=pos-&limit=2&${query}`; next; ) {
        const response = await get(service, next, anonymous);
        byLink.push(tags(response));
        next = response.headers
          .get('link')
          ?.split(', ')
          .find((entry: string) => entry.endsWith('>; rel="next"'))
          ?.slice(1, -'>; rel="next"'.length);
      }
      expect(byNumber.filter((page) => page.length > 0)).toEqual(byLink);
      return byNumber.flat();
    };
    const everywhere = async (query: string, anonymous = false) => {
      const [fromB, fromA] = [await pages(b, query, anonymous), await pages(a, query, anonymous)];
      expect(fromA).toEqual(fromB);
      return fromB;
    };
    const newestFirst = ['acme/pos-5', 'acme/pos-4', 'acme/pos-3', 'acme/pos-2', 'acme/pos-1'];
    expect(await everywhere('sort=created&order=desc')).toEqual(newestFirst);
    await publish('pos-6', '1.0.0');
    expect(await everywhere('sort=created&order=desc')).toEqual(['acme/pos-6', ...newestFirst].slice(0, 8));
    // Downloads reorder the default sort; the count is written after the response: wait until it is there.
    const byDownloads = await everywhere('sort=downloads', true);
    expect(byDownloads.at(-1)).toBe('acme/pos-6');
    const metadata = (await a.request<any>('GET', '/acme/pos-6', { headers: { accept: 'application/json' } })).body;
    await (await fetch(metadata.versions[0].providers[0].url)).arrayBuffer();
    for (let i = 0; i < 100 && (await a.sql("select 1 from box_downloads d join boxes b on b.id = d.box_id where b.name = 'pos-6'")).length === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect((await everywhere('sort=downloads', true))[0]).toBe('acme/pos-6');
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/pos-3', { box: { is_private: true } })).status).toBe(200);
    expect(await everywhere('sort=created&order=desc', true)).toEqual(['acme/pos-6', 'acme/pos-5', 'acme/pos-4', 'acme/pos-2', 'acme/pos-1']);
    expect(await everywhere('sort=created&order=desc')).toEqual(['acme/pos-6', ...newestFirst]);
  });

  it('ends the results where a part of the sort ends once the next part has no row left, on both replicas at once', async () => {
    // Sorted by downloads: the downloaded boxes, then those never downloaded. Page 1 of one box is edge-a; its next
    // link stands for edge-b, in the other part, and goes once edge-b is private.
    await publish('edge-a', '1.0.0');
    await publish('edge-b', '1.0.0');
    const metadata = (await a.request<any>('GET', '/acme/edge-a', { headers: { accept: 'application/json' } })).body;
    await (await fetch(metadata.versions[0].providers[0].url)).arrayBuffer();
    for (let i = 0; i < 100 && (await a.sql("select 1 from box_downloads d join boxes b on b.id = d.box_id where b.name = 'edge-a'")).length === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const first = async (service: TestService) => {
      const response = await service.request<any>('GET', '/api/v1/search?q=edge-&limit=1');
      return { tags: (response.body.boxes as Result[]).map((r) => r.tag), next: response.headers.get('link') !== null };
    };
    for (let i = 0; i < 2; i++) for (const service of [b, a]) expect(await first(service)).toEqual({ tags: ['acme/edge-a'], next: true });
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/edge-b', { box: { is_private: true } })).status).toBe(200);
    for (const service of [b, a]) expect(await first(service)).toEqual({ tags: ['acme/edge-a'], next: false });
  });

  it("starts a signed-in user's numbered page where it now starts once the user joins the organization of a private box", async () => {
    await publish('mem-1', '1.0.0');
    expect((await cloud(a, 'PUT', '/api/v1/box/acme/mem-1', { box: { is_private: true } })).status).toBe(200);
    await publish('mem-2', '1.0.0');
    await publish('mem-3', '1.0.0');
    // Each replica signs its own sessions (its own secret): the user signs in on both.
    await a.createUser('searcher');
    const tokens = new Map([
      [a, await a.signIn('searcher', USER_PASSWORD)],
      [b, await b.signIn('searcher', USER_PASSWORD)],
    ]);
    const page = async (service: TestService, n: number) => {
      const path = `/api/v1/search?q=mem-&limit=1&sort=created&order=asc&page=${n}`;
      return ((await service.request<any>('GET', path, { token: tokens.get(service)! })).body.boxes as Result[]).map((r) => r.tag);
    };
    // Page 2 asked for first and twice: the second from its kept position.
    for (const service of [b, a]) for (let i = 0; i < 2; i++) expect(await page(service, 2)).toEqual(['acme/mem-3']);
    await addMember(a, 'acme', 'searcher', 'user');
    for (const service of [b, a]) expect([await page(service, 2), await page(service, 1)]).toEqual([['acme/mem-2'], ['acme/mem-1']]);
  });
});
