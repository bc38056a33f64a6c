// The backlog gauge against a real PostgreSQL, scraped through the real metrics listener: a burst of scrapes runs
// its SQL once per metrics.database_cache_seconds, not once per scrape.
import { createDatabasePool, createMetricsRegistry, listenMetrics } from '@boxyard/kit';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { sql, type DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookMetrics } from './metrics.ts';

let pool: DatabasePool;
beforeAll(async () => {
  pool = await createDatabasePool({ url: await createTestDatabase('webhook_metrics') });
  await pool.query(sql.unsafe`create table webhook_deliveries (status text not null)`);
  await pool.query(sql.unsafe`create table events (delivered_at timestamptz)`);
  await pool.query(sql.unsafe`insert into webhook_deliveries values ('pending'), ('pending'), ('delivered')`);
  await pool.query(sql.unsafe`insert into events values (null)`);
});
afterAll(() => pool?.end());

describe('boxyard_webhook_backlog', () => {
  it('runs its SQL once for a burst of scrapes within database_cache_seconds', async () => {
    let queries = 0;
    const counting = new Proxy(pool, {
      get: (target, key) =>
        key === 'oneFirst' ? (...args: Parameters<DatabasePool['oneFirst']>) => (queries++, target.oneFirst(...args)) : Reflect.get(target, key),
    });
    const registry = createMetricsRegistry({ service: 'box-repository' });
    createWebhookMetrics(registry, counting, 60);
    const listener = await listenMetrics(registry, { host: '127.0.0.1', port: 0 });
    try {
      const bodies = await Promise.all(Array.from({ length: 25 }, async () => (await fetch(listener.url)).text()));
      for (let i = 0; i < 25; i++) bodies.push(await (await fetch(listener.url)).text());
      expect(bodies.every((body) => /^boxyard_webhook_backlog\{service="box-repository"\} 3$/m.test(body))).toBe(true);
      expect(queries).toBe(1);
    } finally {
      await listener.close();
    }
  });
});
