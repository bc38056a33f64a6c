// The seed's limits across two replicas on one PostgreSQL: the global budget (`max_requests` per
// `window_minutes`) and the class ceilings are shared by both, and what `vagrant box add` does (metadata, then
// the download) counts in the download class only, so pulling boxes never uses up the budget for the API.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { archPath, createBoxPath, createOrganization, startTestService, uploadRaw, type ApiResponse, type TestService } from '../testing/test-service.ts';

const PROBLEM = 'https://boxyard.io/problems';
const path = { org: 'acme', box: 'base', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
const limits = {
  enabled: true,
  window_minutes: 15,
  max_requests: 6,
  download_max_requests: 4,
  download_link_max_requests: 2,
  file_operations_max_requests: 50,
  architecture_operations_max_requests: 50,
};

describe('rate limits shared by two replicas', () => {
  let root: string;
  let seed: TestService;
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'boxrepo-limits-'));
    // The data is made through a replica without limits, so the limited ones start with untouched budgets.
    seed = await startTestService({ localRoot: root });
    await createOrganization(seed, path.org);
    await createBoxPath(seed, seed.adminToken, path, { isPublic: true });
    const uploaded = await uploadRaw(seed, path, await makeBox(), { token: seed.adminToken });
    expect(uploaded.status).toBe(201);
    // Each helper signs in once: that is one request of the global budget on each replica (two in all).
    a = await startTestService({ databaseUrl: seed.databaseUrl, localRoot: root, config: { rate_limiting: limits } });
    b = await startTestService({ databaseUrl: seed.databaseUrl, localRoot: root, config: { rate_limiting: limits } });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await seed?.close();
    await rm(root, { recursive: true, force: true });
  });

  const expectThrottled = (response: ApiResponse, limit: number) => {
    expect(response.status).toBe(429);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(response.body).toMatchObject({ type: `${PROBLEM}/throttled`, status: 429, errors: [] });
    expect(response.headers.get('ratelimit-limit')).toBe(String(limit));
    expect(response.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(response.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60);
  };

  it('vagrant box add (metadata, then the download) counts in the download class, on both replicas together', async () => {
    const metadata = `/${path.org}/${path.box}`;
    const download = `/${path.org}/boxes/${path.box}/versions/${path.version}/providers/${path.provider}/${path.arch}/vagrant.box`;
    const first = await a.request('GET', metadata, { headers: { accept: 'application/json' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('4');
    expect(first.headers.get('ratelimit-remaining')).toBe('3');
    expect((await b.request('GET', download)).status).toBe(200);
    expect((await a.request('GET', `/api/organization/${path.org}/box/${path.box}/metadata`)).status).toBe(200);
    const fourth = await b.request('GET', download);
    expect(fourth.status).toBe(200);
    expect(fourth.headers.get('ratelimit-remaining')).toBe('0');
    expectThrottled(await a.request('GET', download), 4);
    expectThrottled(await b.request('GET', metadata), 4);

    // The API's own budget is untouched by all that: only the two sign-ins of the helpers were counted.
    const api = await a.request('GET', '/api/organization');
    expect(api.status).toBe(200);
    expect(api.headers.get('ratelimit-limit')).toBe('6');
    expect(api.headers.get('ratelimit-remaining')).toBe('3');
    // Download links have a budget of their own as well.
    const link = await b.request('POST', `${archPath(path)}/file/get-download-link`);
    expect(link.status).toBe(200);
    expect(link.headers.get('ratelimit-limit')).toBe('2');
  });

  it('the global budget holds across replicas, and health and metrics stay reachable', async () => {
    // 3 left of 6 (two sign-ins and one list above): b, a, b spend them, then both refuse.
    for (const replica of [b, a, b]) expect((await replica.request('GET', '/api/organization')).status).toBe(200);
    expectThrottled(await a.request('GET', '/api/organization'), 6);
    expectThrottled(await b.request('GET', '/api/status'), 6);
    expect((await a.request('GET', '/health')).status).toBe(200);
    expect((await fetch(b.running.metricsUrl)).status).toBe(200);
    // A class with budget left still answers while the global one is spent: uploads and architecture changes.
    const architecture = await a.request('GET', archPath(path));
    expect(architecture.status).toBe(200);
    expect(architecture.headers.get('ratelimit-limit')).toBe('50');
  });
});

describe('limits configuration', () => {
  it('window_minutes as the spec names it, or window_seconds as the operator writes it; both must agree', async () => {
    const { boxRepositoryConfigSchema } = await import('../config.ts');
    const base = { database: { url: 'postgres://x/y' }, storage: { driver: 'local', root: '/tmp' }, session: { secret: 'x'.repeat(32) } };
    const parse = (rate_limiting: object) => boxRepositoryConfigSchema.safeParse({ ...base, rate_limiting });
    expect(parse({}).data?.rate_limiting).toMatchObject({ max_requests: 1000, window_seconds: 900 });
    expect(parse({ window_minutes: 60 }).data?.rate_limiting.window_seconds).toBe(3600);
    expect(parse({ window_seconds: 120 }).data?.rate_limiting.window_seconds).toBe(120);
    expect(parse({ window_minutes: 1, window_seconds: 60 }).success).toBe(true);
    const clash = parse({ window_minutes: 2, window_seconds: 60 });
    expect(clash.success).toBe(false);
    expect(clash.error?.issues[0]?.path).toEqual(['rate_limiting', 'window_minutes']);
    expect(parse({ download_max_requests: 0 }).success).toBe(false);
    const samePort = boxRepositoryConfigSchema.safeParse({ ...base, boxyard: { api_listen_port_encrypted: 8443, api_listen_port_unencrypted: 8443 } });
    expect(samePort.error?.issues[0]?.path).toEqual(['boxyard', 'api_listen_port_unencrypted']);
  });
});
