// The webhook outbox's statements (see worker.ts for how replicas share it): fan events out into deliveries, claim
// due deliveries under a lease, record an attempt's outcome, delete what retention lets go.
import type { FastifyBaseLogger } from 'fastify';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { BoxRepositoryConfig } from '../config.ts';
import { int8 } from '../records.ts';
import { retryDelaySeconds } from './backoff.ts';
import type { WebhookMetrics } from './metrics.ts';
import type { AttemptResult } from './send.ts';

export const FAN_OUT_BATCH = 500;
const ERROR_TEXT_MAX = 500;

const claimedRow = z.object({
  id: z.string(),
  attempts: z.number(),
  webhook_id: int8,
  url: z.string(),
  secret: z.string(),
  event_id: int8,
  type: z.string(),
  data: z.string(),
  traceparent: z.string().nullable(),
});
export type Claimed = z.infer<typeof claimedRow>;

/** Events not yet handled become one delivery per subscribed webhook, and are marked. Returns the events taken. */
export async function fanOut(pool: DatabasePool): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    with batch as (
      select id, type, created_at from events where delivered_at is null order by id limit ${FAN_OUT_BATCH} for update skip locked
    ), fanned as (
      insert into webhook_deliveries (webhook_id, event_id)
      select w.id, b.id from batch b join webhooks w on b.type = any (w.events) and w.created_at <= b.created_at
      on conflict do nothing
    ), marked as (
      update events e set delivered_at = now() from batch b where e.id = b.id returning 1
    )
    select count(*)::int as n from marked`);
}

/** Takes up to `concurrency` due deliveries and leases them for `lease` seconds (attempts + 1). */
export async function claim(pool: DatabasePool, concurrency: number, lease: number): Promise<readonly Claimed[]> {
  return pool.any(sql.type(claimedRow)`
    with due as (
      select id from webhook_deliveries
      where status = 'pending' and next_attempt_at <= now()
      order by next_attempt_at, id limit ${concurrency}
      for update skip locked
    )
    update webhook_deliveries d
       set attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => ${lease})
      from due, webhooks w, events e
     where d.id = due.id and w.id = d.webhook_id and e.id = d.event_id
    returning d.id::text as id, d.attempts, w.id as webhook_id, w.url, w.secret, e.id as event_id, e.type, e.data::text as data, e.traceparent`);
}

export interface RecordDeps {
  pool: DatabasePool;
  config: BoxRepositoryConfig['webhooks'];
  metrics: WebhookMetrics;
  log: FastifyBaseLogger;
}

/** Records an attempt and the delivery's outcome, only if the lease is still ours (the attempt count unchanged). */
export async function record(
  { pool, config, metrics, log }: RecordDeps,
  delivery: Claimed,
  startedAt: Date,
  durationMs: number,
  result: AttemptResult,
): Promise<void> {
  const error = result.error?.slice(0, ERROR_TEXT_MAX) ?? null;
  const gaveUp = !result.ok && delivery.attempts >= config.max_attempts;
  const retryIn = result.ok || gaveUp ? 0 : retryDelaySeconds(config, delivery.attempts);
  const status = result.ok ? 'delivered' : gaveUp ? 'failed' : 'pending';
  // One statement (one round trip): the outcome, and the attempt's log row only if the update applied.
  const updated = await pool
    .query(sql.unsafe`
    with updated as (
      update webhook_deliveries
         set status = ${status}::text, last_status_code = ${result.statusCode ?? null}, last_error = ${error},
             next_attempt_at = case when ${status}::text = 'pending' then now() + make_interval(secs => ${retryIn}) else next_attempt_at end,
             finished_at = case when ${status}::text = 'pending' then null else now() end
       where id = ${delivery.id}::uuid and attempts = ${delivery.attempts} and status = 'pending'
      returning id
    )
    insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
    select id, ${delivery.attempts}::int, ${startedAt.toISOString()}::timestamptz, ${durationMs}::int, ${result.statusCode ?? null}::int, ${error}::text from updated`)
    .then((r) => r.rowCount > 0);
  if (!updated) {
    log.warn(
      { delivery: delivery.id, attempt: delivery.attempts },
      'webhook delivery result not recorded: the webhook was deleted, or the attempt outlived its lease and another owns it',
    );
    return;
  }
  if (!result.ok) metrics.failures.inc({ reason: result.reason ?? 'connection' });
  if (result.ok) metrics.deliveries.inc({ outcome: 'delivered' });
  else if (gaveUp) metrics.deliveries.inc({ outcome: 'failed' });
  if (!result.ok)
    log.info(
      { webhook: delivery.webhook_id, delivery: delivery.id, attempt: delivery.attempts, reason: result.reason, gaveUp },
      `webhook delivery failed: ${error ?? ''}`,
    );
}

/** Handled events older than the retention go (with their finished deliveries), unless a delivery is pending. */
export async function deleteOldEvents(pool: DatabasePool, retentionDays: number): Promise<void> {
  await pool.query(sql.unsafe`
    delete from events e where e.delivered_at < now() - make_interval(secs => ${retentionDays * 86400})
      and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')`);
}
