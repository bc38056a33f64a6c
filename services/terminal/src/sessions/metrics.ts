// The terminal's own Prometheus series: sessions alive per backend (read from PostgreSQL at scrape time, so every
// gateway replica reports the installation's count: aggregate with max, not sum) and how long a start takes,
// from the request to an agent accepting connections, by backend and outcome.
import { cachedReading, ignoreError } from '@boxyard/kit';
import { Gauge, Histogram, type Registry } from '@prometheus-io/client';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export interface SessionMetrics {
  startDuration: Histogram<'backend' | 'outcome'>;
}

const liveCount = z.object({ backend: z.string(), state: z.string(), count: z.number() });

/** `cacheSeconds`: the count's SQL runs at most once per this many seconds, however often it is scraped. */
export function createSessionMetrics(registry: Registry, pool: DatabasePool, backend: 'local' | 'kubernetes', cacheSeconds: number): SessionMetrics {
  const readLive = cachedReading(
    () =>
      pool
        .any(sql.type(liveCount)`
        select backend, state, count(*)::int as count from terminal_sessions where state in ('starting', 'running') group by backend, state`)
        .catch(ignoreError('the gauge keeps its last value while the database is away')),
    cacheSeconds,
  );
  new Gauge({
    name: 'boxyard_terminal_sessions_active',
    help: 'Terminal sessions starting or running in the installation, by backend and state (every replica reports the same count).',
    labelNames: ['backend', 'state'],
    registers: [registry],
    async collect() {
      const rows = await readLive();
      if (!rows) return; // the database is down: the scrape still answers, and the database errors say why
      this.reset();
      for (const backend of ['local', 'kubernetes']) for (const state of ['starting', 'running']) this.set({ backend, state }, 0);
      for (const row of rows) this.set({ backend: row.backend, state: row.state }, row.count);
    },
  });
  const metrics = {
    startDuration: new Histogram({
      name: 'boxyard_terminal_session_start_duration_seconds',
      help: 'Time from a start request to the agent accepting connections, by backend and outcome (started, failed).',
      labelNames: ['backend', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
      registers: [registry],
    }),
  };
  // At zero from the start, so the first start already shows in rates and quantiles.
  for (const outcome of ['started', 'failed']) metrics.startDuration.zero({ backend, outcome });
  return metrics;
}
