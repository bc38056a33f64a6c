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
import type { DatabasePool } from 'slonik';
import type { BoxRepositoryConfig } from '../config.ts';
import type { WebhookMetrics } from './metrics.ts';
import { claim, deleteOldEvents, FAN_OUT_BATCH, fanOut, record, type Claimed } from './outbox.ts';
import type { Sender } from './send.ts';
import { signedHeaders } from './signature.ts';
import { ignoreError } from '@boxyard/kit';

/** Seconds a lease outlives the attempt's own timeout (slow DNS, a busy event loop). */
const LEASE_MARGIN_SECONDS = 30;
const RETENTION_EVERY_MS = 10 * 60 * 1000;

export interface WebhookWorker {
  start(): void;
  stop(): Promise<void>;
  /** One pass: fan out, claim and send what is due (tests and the loop). Returns the deliveries attempted. */
  runOnce(): Promise<number>;
}

interface WorkerDeps {
  pool: DatabasePool;
  config: BoxRepositoryConfig['webhooks'];
  sender: Sender;
  metrics: WebhookMetrics;
  log: FastifyBaseLogger;
}

interface WorkerState {
  readonly deps: WorkerDeps;
  readonly lease: number;
  timer: NodeJS.Timeout | undefined;
  stopped: boolean;
  /** The pass in flight, awaited by stop(). */
  current: Promise<unknown> | undefined;
  lastRetention: number;
  failing: boolean;
  // Stopping interrupts attempts in flight (recorded as such, retried later) instead of waiting out their timeout.
  stopping: AbortController;
}

export function createWebhookWorker(deps: WorkerDeps): WebhookWorker {
  const state: WorkerState = {
    deps,
    lease: deps.config.timeout_seconds + LEASE_MARGIN_SECONDS,
    timer: undefined,
    stopped: true,
    current: undefined,
    lastRetention: 0,
    failing: false,
    stopping: new AbortController(),
  };
  return {
    start: () => start(state),
    stop: () => stop(state),
    runOnce: () => runOnce(state),
  };
}

function start(state: WorkerState): void {
  if (!state.stopped) return;
  state.stopped = false;
  state.stopping = new AbortController();
  state.timer = setTimeout(() => void loop(state), 0);
}

async function stop(state: WorkerState): Promise<void> {
  state.stopped = true;
  if (state.timer) clearTimeout(state.timer);
  state.stopping.abort();
  // The pass in flight ends, so its outcomes (interruptions included) are recorded.
  await state.current?.catch(ignoreError('the pass records its own outcome; stopping only waits for it'));
}

async function deliver(state: WorkerState, delivery: Claimed): Promise<void> {
  const body = JSON.stringify({ event: delivery.type, data: JSON.parse(delivery.data) as unknown });
  const startedAt = new Date();
  const started = performance.now();
  // Every attempt joins the trace of the request that recorded the event (retries included).
  const cause = delivery.traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent: delivery.traceparent }) : ROOT_CONTEXT;
  const result = await context.with(cause, () =>
    state.deps.sender.send({
      url: delivery.url,
      body,
      headers: signedHeaders(delivery.secret, delivery.id, body, startedAt),
      signal: state.stopping.signal,
      attributes: {
        'boxyard.webhook.id': delivery.webhook_id,
        'boxyard.webhook.delivery_id': delivery.id,
        'boxyard.webhook.event': delivery.type,
        'boxyard.webhook.attempt': delivery.attempts,
      },
    }),
  );
  await record(state.deps, delivery, startedAt, Math.round(performance.now() - started), result);
}

/** Old finished deliveries and handled events go, so the outbox and the log stay small. */
async function applyRetention(state: WorkerState): Promise<void> {
  if (Date.now() - state.lastRetention < RETENTION_EVERY_MS) return;
  state.lastRetention = Date.now();
  await deleteOldEvents(state.deps.pool, state.deps.config.log_retention_days);
}

async function runOnce(state: WorkerState): Promise<number> {
  const { pool, config, log } = state.deps;
  while ((await fanOut(pool)) === FAN_OUT_BATCH) {
    /* more events waiting */
  }
  const claimed = await claim(pool, config.concurrency, state.lease);
  await Promise.all(
    claimed.map((delivery) =>
      deliver(state, delivery).catch((error: unknown) => log.error({ err: error, delivery: delivery.id }, 'webhook delivery could not be recorded')),
    ),
  );
  await applyRetention(state);
  return claimed.length;
}

async function loop(state: WorkerState): Promise<void> {
  if (state.stopped) return;
  const { config, log } = state.deps;
  let busy = false;
  try {
    state.current = runOnce(state);
    busy = (await state.current) === config.concurrency; // a full batch: more may be due right away
    if (state.failing) log.info('webhook worker recovered');
    state.failing = false;
  } catch (error) {
    // Once per outage, not once per poll: the database errors metric counts the rest.
    if (!state.failing) log.warn({ err: error }, 'webhook worker pass failed (retrying every poll interval)');
    state.failing = true;
  } finally {
    state.current = undefined;
  }
  if (!state.stopped) state.timer = setTimeout(() => void loop(state), busy ? 0 : config.poll_interval_seconds * 1000);
}
