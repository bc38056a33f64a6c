// The live-session gauge against a real PostgreSQL, scraped through the real metrics listener: a burst of scrapes
// runs its SQL once per metrics.database_cache_seconds, not once per scrape.
import { createDatabasePool, createMetricsRegistry, listenMetrics } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { createSessionMetrics } from './metrics.ts';

let pool: DatabasePool;
beforeAll(async () => {
  pool = await createDatabasePool({ url: await createTestDatabase('session_metrics') });
  await pool.query(sql.unsafe`create table terminal_sessions (backend text not null, state text not null)`);
  await pool.query(sql.unsafe`insert into terminal_sessions values ('local', 'running'), ('local', 'running'), ('local', 'stopped')`);
});
afterAll(() => pool?.end());

describe('boxyard_terminal_sessions_active', () => {
  it('runs its SQL once for a burst of scrapes within database_cache_seconds', async () => {
    let queries = 0;
    const counting = new Proxy(pool, {
      get: (target, key) => (key === 'any' ? (...args: Parameters<DatabasePool['any']>) => (queries++, target.any(...args)) : Reflect.get(target, key)),
    });
    const registry = createMetricsRegistry({ service: 'terminal' });
    createSessionMetrics(registry, counting, 'local', 60);
    const listener = await listenMetrics(registry, { host: '127.0.0.1', port: 0 });
    try {
      const bodies = await Promise.all(Array.from({ length: 25 }, async () => (await fetch(listener.url)).text()));
      for (let i = 0; i < 25; i++) bodies.push(await (await fetch(listener.url)).text());
      expect(bodies.every((body) => /^boxyard_terminal_sessions_active\{backend="local",state="running",service="terminal"\} 2$/m.test(body))).toBe(true);
      expect(queries).toBe(1);
    } finally {
      await listener.close();
    }
  });
});
