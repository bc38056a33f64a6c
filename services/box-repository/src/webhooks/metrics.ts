// Webhook series: deliveries by final outcome (delivered, failed after the last attempt), failed attempts by
// reason, and the backlog: deliveries waiting to be sent plus events not yet turned into deliveries. The backlog
// is read from PostgreSQL at scrape time, so every replica reports the installation's: aggregate with max.
import { cachedReading, ignoreError } from '@boxyard/kit';
import { Counter, Gauge, type Registry } from '@prometheus-io/client';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { FailureReason } from './send.ts';

export interface WebhookMetrics {
  deliveries: Counter<'outcome'>;
  failures: Counter<'reason'>;
}

const REASONS: FailureReason[] = ['status', 'redirect', 'refused_address', 'timeout', 'connection'];

/** `cacheSeconds`: the backlog's SQL runs at most once per this many seconds, however often it is scraped. */
export function createWebhookMetrics(registry: Registry, pool: DatabasePool, cacheSeconds: number): WebhookMetrics {
  const registers = [registry];
  const readBacklog = cachedReading(
    () =>
      pool
        .oneFirst(sql.type(z.object({ n: z.number() }))`
        select ((select count(*) from webhook_deliveries where status = 'pending') + (select count(*) from events where delivered_at is null))::int as n`)
        .catch(ignoreError('the gauge keeps its last value while the database is away')),
    cacheSeconds,
  );
  new Gauge({
    name: 'boxyard_webhook_backlog',
    help: 'Webhook deliveries waiting to be sent (new or retrying) plus events not yet fanned out to webhooks, in the installation (every replica reports the same count).',
    registers,
    async collect() {
      const backlog = await readBacklog();
      if (backlog !== undefined) this.set(backlog); // the database is down: the scrape still answers, the database errors say why
    },
  });
  const metrics: WebhookMetrics = {
    deliveries: new Counter({
      name: 'boxyard_webhook_deliveries_total',
      help: 'Webhook deliveries that ended, by outcome: delivered, or failed after the last attempt.',
      labelNames: ['outcome'],
      registers,
    }),
    failures: new Counter({
      name: 'boxyard_webhook_delivery_failures_total',
      help: 'Webhook delivery attempts that failed, by reason (status, redirect, refused_address, timeout, connection).',
      labelNames: ['reason'],
      registers,
    }),
  };
  // At zero from the start, so rates and alerts see the first one.
  for (const outcome of ['delivered', 'failed']) metrics.deliveries.inc({ outcome }, 0);
  for (const reason of REASONS) metrics.failures.inc({ reason }, 0);
  return metrics;
}
