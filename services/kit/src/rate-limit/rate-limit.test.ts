// The limit is global: two app instances on one database share the counters, as two replicas would.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/harness/fixtures.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { createApp } from '../http/create-app.ts';
import { installRateLimit, rateLimitMigrations } from './rate-limit.ts';

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
