// Delivers the events outbox to webhooks. Any replica may run this worker; PostgreSQL keeps them apart:
//   1. fan-out: events not yet handled (delivered_at is null) become one delivery per subscribed webhook, and are
//      marked, in one statement over rows taken FOR UPDATE SKIP LOCKED (two replicas never take the same event);
//   2. claim: due deliveries are taken FOR UPDATE SKIP LOCKED and leased (attempts + 1, next_attempt_at moved
//      past the attempt's timeout) in one short transaction, so no connection is held while the request runs;
//   3. send, then record the attempt and the delivery's outcome — only if the lease is still ours (the attempt
//      count is unchanged), so a replica that stalled past its lease cannot overwrite a newer attempt.
// A replica that dies mid-attempt leaves the lease to expire and another replica retries (same webhook-id, so
// receivers drop a duplicate). A webhook only receives events recorded after it was created.
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { BoxRepositoryConfig } from '../config.ts';
import { int8 } from '../records.ts';
import { retryDelaySeconds } from './backoff.ts';
import type { WebhookMetrics } from './metrics.ts';
import type { AttemptResult, Sender } from './send.ts';
import { signedHeaders } from './signature.ts';

const FAN_OUT_BATCH = 500;
/** Seconds a lease outlives the attempt's own timeout (slow DNS, a busy event loop). */
const LEASE_MARGIN_SECONDS = 30;
const ERROR_TEXT_MAX = 500;
const RETENTION_EVERY_MS = 10 * 60 * 1000;

const claimedRow = z.object({
  id: z.string(), attempts: z.number(), webhook_id: int8, url: z.string(), secret: z.string(), event_id: int8, type: z.string(), data: z.string(), traceparent: z.string().nullable(),
});
type Claimed = z.infer<typeof claimedRow>;

export interface WebhookWorker {
  start(): void;
  stop(): Promise<void>;
  /** One pass: fan out, claim and send what is due (tests and the loop). Returns the deliveries attempted. */
  runOnce(): Promise<number>;
}

export function createWebhookWorker(deps: { pool: DatabasePool; config: BoxRepositoryConfig['webhooks']; sender: Sender; metrics: WebhookMetrics; log: FastifyBaseLogger }): WebhookWorker {
  const { pool, config, sender, metrics, log } = deps;
  const lease = config.timeout_seconds + LEASE_MARGIN_SECONDS;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let current: Promise<unknown> | undefined;
  let lastRetention = 0;
  let failing = false;
  // Stopping interrupts attempts in flight (recorded as such, retried later) instead of waiting out their timeout.
  let stopping = new AbortController();

  async function fanOut(): Promise<number> {
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

  async function claim(): Promise<readonly Claimed[]> {
    return pool.any(sql.type(claimedRow)`
      with due as (
        select id from webhook_deliveries
        where status = 'pending' and next_attempt_at <= now()
        order by next_attempt_at, id limit ${config.concurrency}
        for update skip locked
      )
      update webhook_deliveries d
         set attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => ${lease})
        from due, webhooks w, events e
       where d.id = due.id and w.id = d.webhook_id and e.id = d.event_id
      returning d.id::text as id, d.attempts, w.id as webhook_id, w.url, w.secret, e.id as event_id, e.type, e.data::text as data, e.traceparent`);
  }

  async function record(delivery: Claimed, startedAt: Date, durationMs: number, result: AttemptResult): Promise<void> {
    const error = result.error?.slice(0, ERROR_TEXT_MAX) ?? null;
    const gaveUp = !result.ok && delivery.attempts >= config.max_attempts;
    const retryIn = result.ok || gaveUp ? 0 : retryDelaySeconds(config, delivery.attempts);
    const status = result.ok ? 'delivered' : gaveUp ? 'failed' : 'pending';
    // One statement (one round trip): the outcome, and the attempt's log row only if the update applied.
    const updated = await pool.query(sql.unsafe`
      with updated as (
        update webhook_deliveries
           set status = ${status}::text, last_status_code = ${result.statusCode ?? null}, last_error = ${error},
               next_attempt_at = case when ${status}::text = 'pending' then now() + make_interval(secs => ${retryIn}) else next_attempt_at end,
               finished_at = case when ${status}::text = 'pending' then null else now() end
         where id = ${delivery.id}::uuid and attempts = ${delivery.attempts} and status = 'pending'
        returning id
      )
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
      select id, ${delivery.attempts}::int, ${startedAt.toISOString()}::timestamptz, ${durationMs}::int, ${result.statusCode ?? null}::int, ${error}::text from updated`).then((r) => r.rowCount > 0);
    if (!updated) {
      log.warn({ delivery: delivery.id, attempt: delivery.attempts }, 'webhook delivery result not recorded: the webhook was deleted, or the attempt outlived its lease and another owns it');
      return;
    }
    if (!result.ok) metrics.failures.inc({ reason: result.reason ?? 'connection' });
    if (result.ok) metrics.deliveries.inc({ outcome: 'delivered' });
    else if (gaveUp) metrics.deliveries.inc({ outcome: 'failed' });
    if (!result.ok) log.info({ webhook: delivery.webhook_id, delivery: delivery.id, attempt: delivery.attempts, reason: result.reason, gaveUp }, `webhook delivery failed: ${error ?? ''}`);
  }

  async function deliver(delivery: Claimed): Promise<void> {
    const body = JSON.stringify({ event: delivery.type, data: JSON.parse(delivery.data) as unknown });
    const startedAt = new Date();
    const started = performance.now();
    // Every attempt joins the trace of the request that recorded the event (retries included).
    const cause = delivery.traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent: delivery.traceparent }) : ROOT_CONTEXT;
    const result = await context.with(cause, () =>
      sender.send({
        url: delivery.url,
        body,
        headers: signedHeaders(delivery.secret, delivery.id, body, startedAt),
        signal: stopping.signal,
        attributes: { 'boxyard.webhook.id': delivery.webhook_id, 'boxyard.webhook.delivery_id': delivery.id, 'boxyard.webhook.event': delivery.type, 'boxyard.webhook.attempt': delivery.attempts },
      }),
    );
    await record(delivery, startedAt, Math.round(performance.now() - started), result);
  }

  /** Old finished deliveries and handled events go, so the outbox and the log stay small. */
  async function applyRetention(): Promise<void> {
    if (Date.now() - lastRetention < RETENTION_EVERY_MS) return;
    lastRetention = Date.now();
    const days = config.log_retention_days;
    await pool.query(sql.unsafe`
      delete from events e where e.delivered_at < now() - make_interval(secs => ${days * 86400})
        and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')`);
  }

  async function runOnce(): Promise<number> {
    while ((await fanOut()) === FAN_OUT_BATCH) { /* more events waiting */ }
    const claimed = await claim();
    await Promise.all(claimed.map((delivery) => deliver(delivery).catch((error: unknown) => log.error({ err: error, delivery: delivery.id }, 'webhook delivery could not be recorded'))));
    await applyRetention();
    return claimed.length;
  }

  async function loop(): Promise<void> {
    if (stopped) return;
    let busy = false;
    try {
      current = runOnce();
      busy = (await current) === config.concurrency; // a full batch: more may be due right away
      if (failing) log.info('webhook worker recovered');
      failing = false;
    } catch (error) {
      // Once per outage, not once per poll: the database errors metric counts the rest.
      if (!failing) log.warn({ err: error }, 'webhook worker pass failed (retrying every poll interval)');
      failing = true;
    } finally {
      current = undefined;
    }
    if (!stopped) timer = setTimeout(() => void loop(), busy ? 0 : config.poll_interval_seconds * 1000);
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      stopping = new AbortController();
      timer = setTimeout(() => void loop(), 0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      stopping.abort();
      // The pass in flight ends, so its outcomes (interruptions included) are recorded.
      await current?.catch(() => {});
    },
    runOnce,
  };
}
