// The limit is global: two app instances on one database share the counters, as two replicas would.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { createApp } from '../http/create-app.ts';
import { serverSchema, type TrustProxy } from '../config/common.ts';
import { clientKey, installRateLimit, rateLimitMigrations } from './rate-limit.ts';

let pools: DatabasePool[] = [];
let apps: FastifyInstance[] = [];

async function replica(url: string, errorShape: 'problem' | 'envelope' = 'problem'): Promise<FastifyInstance> {
  const pool = await createDatabasePool({ url, schema: 'svc', poolSize: 2 });
  pools.push(pool);
  await migrate(url, 'svc', [rateLimitMigrations]);
  const app = await createApp({ service: 'svc', version: '1', errorShape, logLevel: 'silent', openapi: { title: 't' } });
  await installRateLimit(app, { pool, max: 5, windowSeconds: 60, namespace: 'svc' });
  app.get('/ping', async () => ({ pong: true }));
  await app.ready();
  apps.push(app);
  return app;
}

let url: string;
beforeAll(async () => {
  url = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await Promise.all(pools.map((p) => p.end()));
  apps = [];
  pools = [];
});

describe('rate limiting shared through PostgreSQL', () => {
  it('counts requests to both replicas against one limit and answers 429 with RateLimit-* and Retry-After', async () => {
    const [a, b] = [await replica(url), await replica(url)];
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await (i % 2 ? b : a).inject({ method: 'GET', url: '/ping', remoteAddress: '10.1.1.1' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('5');
      remaining.push(String(res.headers['ratelimit-remaining']));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const refused = await b.inject({ method: 'GET', url: '/ping', remoteAddress: '10.1.1.1' });
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect(refused.headers['ratelimit-remaining']).toBe('0');
    expect(refused.json()).toMatchObject({ type: 'https://boxyard.io/problems/throttled', status: 429, errors: [] });
    // Another client is counted apart; health probes are never limited.
    expect((await a.inject({ method: 'GET', url: '/ping', remoteAddress: '10.2.2.2' })).statusCode).toBe(200);
    expect((await a.inject({ method: 'GET', url: '/health', remoteAddress: '10.1.1.1' })).statusCode).toBe(200);
  });

  it('renders the refusal in the envelope shape for envelope services', async () => {
    const app = await replica(await createTestDatabase(), 'envelope');
    for (let i = 0; i < 5; i++) await app.inject({ method: 'GET', url: '/ping' });
    const refused = await app.inject({ method: 'GET', url: '/ping' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ success: false, message: expect.stringMatching(/^Rate limit exceeded: 5 requests per 60 s/) });
  });
});

describe('when the counters cannot be read', () => {
  /** A replica whose logs are kept, configured to allow or refuse when its store fails. */
  async function replicaWithLogs(dbUrl: string, onStoreError: 'allow' | 'refuse') {
    const pool = await createDatabasePool({ url: dbUrl, schema: 'svc', poolSize: 2 });
    pools.push(pool);
    await migrate(dbUrl, 'svc', [rateLimitMigrations]);
    const logs: string[] = [];
    const logStream = new Writable({ write: (chunk, _encoding, done) => (logs.push(String(chunk)), done()) });
    const app = await createApp({ service: 'svc', version: '1', errorShape: 'problem', logLevel: 'warn', logStream, openapi: { title: 't' } });
    await installRateLimit(app, { pool, max: 5, windowSeconds: 60, namespace: 'svc', onStoreError });
    app.get('/ping', async () => ({ pong: true }));
    await app.ready();
    apps.push(app);
    return { app, pool, logs };
  }

  /** Takes the counter table away (a store that errors on every request), runs `body`, puts it back. */
  async function withBrokenStore(pool: DatabasePool, body: () => Promise<void>) {
    await pool.query(sql.unsafe`alter table rate_limit_counters rename to rate_limit_counters_away`);
    try {
      await body();
    } finally {
      await pool.query(sql.unsafe`alter table rate_limit_counters_away rename to rate_limit_counters`);
    }
  }

  const metric = async (app: FastifyInstance, outcome: string) =>
    (await app.metrics.getSingleMetric('boxyard_rate_limit_store_errors_total')!.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

  it('allow (the default): requests go through uncounted, logged once and counted', async () => {
    const { app, pool, logs } = await replicaWithLogs(await createTestDatabase(), 'allow');
    await withBrokenStore(pool, async () => {
      for (let i = 0; i < 8; i++) {
        const res = await app.inject({ method: 'GET', url: '/ping' });
        expect(res.statusCode).toBe(200);
      }
    });
    expect(await metric(app, 'allowed')).toBe(8);
    const warnings = logs.filter((line) => line.includes('rate limiting cannot count requests'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, onStoreError: 'allow' });
    // Counting resumes with the store.
    expect((await app.inject({ method: 'GET', url: '/ping' })).headers['ratelimit-remaining']).toBe('4');
  });

  it('refuse: 503 with Retry-After in the error shape, never a 500, counted', async () => {
    const { app, pool } = await replicaWithLogs(await createTestDatabase(), 'refuse');
    await withBrokenStore(pool, async () => {
      const res = await app.inject({ method: 'GET', url: '/ping' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json()).toMatchObject({ status: 503, detail: 'Rate limiting is unavailable; try again shortly' });
      expect(res.body).not.toMatch(/rate_limit_counters|relation/);
    });
    expect(await metric(app, 'refused')).toBe(1);
    expect((await app.inject({ method: 'GET', url: '/ping' })).statusCode).toBe(200);
  });

  it('counts 429 refusals', async () => {
    const { app } = await replicaWithLogs(await createTestDatabase(), 'allow');
    for (let i = 0; i < 7; i++) await app.inject({ method: 'GET', url: '/ping' });
    expect((await app.metrics.getSingleMetric('boxyard_rate_limit_refusals_total')!.get()).values[0]!.value).toBe(2);
  });
});

describe('client address behind a proxy (server.trust_proxy)', () => {
  async function behindProxy(trustProxy: TrustProxy) {
    const dbUrl = await createTestDatabase();
    const pool = await createDatabasePool({ url: dbUrl, schema: 'svc', poolSize: 2 });
    pools.push(pool);
    await migrate(dbUrl, 'svc', [rateLimitMigrations]);
    const app = await createApp({ service: 'svc', version: '1', errorShape: 'problem', logLevel: 'silent', trustProxy, openapi: { title: 't' } });
    await installRateLimit(app, { pool, max: 3, windowSeconds: 60, namespace: 'svc' });
    app.get('/ping', async (request) => ({ ip: request.ip, origin: `${request.protocol}://${request.host}` }));
    await app.ready();
    apps.push(app);
    return app;
  }
  /** What a client behind one Ingress sends: a forged X-Forwarded-For entry, the proxy appends the real address. */
  const throughIngress = (app: FastifyInstance, forged: string) =>
    app.inject({
      method: 'GET',
      url: '/ping',
      remoteAddress: '10.245.0.7',
      headers: { 'x-forwarded-for': `${forged}, 203.0.113.9`, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'boxes.example.com' },
    });

  it('with one trusted hop, a client cannot escape its limit by forging X-Forwarded-For', async () => {
    const app = await behindProxy(1);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await throughIngress(app, `198.51.100.${i}`);
      statuses.push(res.statusCode);
      if (res.statusCode === 200) expect(res.json()).toEqual({ ip: '203.0.113.9', origin: 'https://boxes.example.com' });
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('trusting the proxy by address works alike; an untrusted peer’s forwarded headers are ignored', async () => {
    const app = await behindProxy(['10.245.0.0/16']);
    expect((await throughIngress(app, '198.51.100.1')).json()).toEqual({ ip: '203.0.113.9', origin: 'https://boxes.example.com' });
    const direct = await app.inject({
      method: 'GET',
      url: '/ping',
      remoteAddress: '192.0.2.50',
      headers: { host: 'svc.local', 'x-forwarded-for': '198.51.100.1', 'x-forwarded-proto': 'https' },
    });
    expect(direct.json()).toEqual({ ip: '192.0.2.50', origin: 'http://svc.local' });
  });

  it('trust_proxy: true is refused with a message saying what to write instead', () => {
    const result = serverSchema.safeParse({ port: 0, trust_proxy: true });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/every X-Forwarded-For hop.*number of proxies/);
    expect(serverSchema.parse({ port: 0, trust_proxy: 1 }).trust_proxy).toBe(1);
    expect(serverSchema.parse({ port: 0 }).trust_proxy).toBe(false);
    expect(serverSchema.safeParse({ port: 0, trust_proxy: ['not-an-address'] }).success).toBe(false);
  });
});

describe('clientKey: whose counter a request uses', () => {
  it('an IPv4 address as it is; IPv4-mapped IPv6 as IPv4; IPv6 by its /56, however it is written', () => {
    expect(clientKey('192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('2001:db8:1:2ff::1')).toBe('2001:db8:1:200::/56');
    expect(clientKey('2001:0db8:0001:02aa:0:0:0:9')).toBe(clientKey('2001:db8:1:2ff::1'));
    expect(clientKey('2001:db8:1:300::1')).not.toBe(clientKey('2001:db8:1:2ff::1'));
    expect(clientKey('::1')).toBe('0:0:0:0::/56');
  });
});
