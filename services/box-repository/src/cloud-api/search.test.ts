// Search (`vagrant cloud search`, GET /api/v1/search) lists boxes with a released file and sorts by downloads. Both
// are kept per box (migration 0010) instead of computed over the whole catalogue per request; these tests hold
// them true as the tree changes: a release, a revoke, a deleted file, a download, a deleted version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

describe('publishing API search', () => {
  let service: TestService;
  let key: string;
  let box: Buffer;
  const cloud = (method: string, path: string, json?: unknown) => service.request<any>(method, path, { headers: { authorization: `Bearer ${key}` }, ...(json !== undefined ? { json } : {}) });
  const found = async (query = 'q=find&sort=downloads') => ((await cloud('GET', `/api/v1/search?${query}`)).body.boxes as { tag: string }[]).map((b) => b.tag);

  async function publish(name: string, version: string, release = true): Promise<void> {
    if ((await cloud('GET', `/api/v1/box/acme/${name}`)).status === 404) await cloud('POST', '/api/v1/boxes', { box: { username: 'acme', name, is_private: false } });
    await cloud('POST', `/api/v1/box/acme/${name}/versions`, { version: { version } });
    await cloud('POST', `/api/v1/box/acme/${name}/version/${version}/providers`, { provider: { name: 'virtualbox' } });
    const upload = (await cloud('GET', `/api/v1/box/acme/${name}/version/${version}/provider/virtualbox/upload`)).body;
    expect((await fetch(upload.upload_path, { method: 'PUT', body: box })).status).toBe(200);
    if (release) expect((await cloud('PUT', `/api/v1/box/acme/${name}/version/${version}/release`)).body.status).toBe('active');
  }
  const download = async (name: string, version: string) => {
    const metadata = (await service.request<{ versions: { version: string; providers: { url: string }[] }[] }>('GET', `/acme/${name}`, { headers: { accept: 'application/json' } })).body;
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
    for (let i = 0; i < 100 && (await service.sql<{ count: string }>("select count from box_downloads d join boxes b on b.id = d.box_id where b.name = 'find-many'"))[0]?.count !== '3'; i++) await new Promise((r) => setTimeout(r, 50));
    const order = (await found('q=find-&sort=downloads&order=desc')).filter((tag) => tag === 'acme/find-few' || tag === 'acme/find-many');
    expect(order).toEqual(['acme/find-many', 'acme/find-few']);
    expect((await cloud('DELETE', '/api/v1/box/acme/find-many/version/1.0.0')).status).toBe(200);
    const after = (await found('q=find-&sort=downloads&order=desc')).filter((tag) => tag === 'acme/find-few' || tag === 'acme/find-many');
    expect(after).toEqual(['acme/find-many', 'acme/find-few']);
    const asc = (await found('q=find-&sort=downloads&order=asc')).filter((tag) => tag === 'acme/find-few' || tag === 'acme/find-many');
    expect(asc).toEqual(['acme/find-few', 'acme/find-many']);
  });
});
