// @fastify/rate-limit with a PostgreSQL store, so the limit holds across replicas. Headers follow the
// IETF draft (RateLimit-Limit / -Remaining / -Reset, Retry-After on 429).
import { fileURLToPath } from 'node:url';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import { isIPv6 } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { Counter } from '@prometheus-io/client';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { HttpError } from '../http/http-error.ts';
import { RETRY_AFTER_SECONDS } from '../http/unavailable.ts';
import type { MigrationSource } from '../db/migrate.ts';
import { ignoreError } from '../errors/ignore-error.ts';

export const rateLimitMigrations: MigrationSource = {
  namespace: 'kit-rate-limit',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

const counterRow = z.object({ hits: z.number(), ttl_ms: z.number() });

/** One atomic upsert per request: a new window starts when the old one has passed. */
export async function hit(pool: DatabasePool, key: string, windowMs: number): Promise<{ current: number; ttl: number }> {
  const row = await pool.one(sql.type(counterRow)`
    insert into rate_limit_counters as c (key, hits, resets_at)
    values (${key}, 1, now() + make_interval(secs => ${windowMs / 1000}))
    on conflict (key) do update set
      hits = case when c.resets_at <= now() then 1 else c.hits + 1 end,
      resets_at = case when c.resets_at <= now() then excluded.resets_at else c.resets_at end
    returning hits, greatest(0, ceil(extract(epoch from (resets_at - now())) * 1000))::float8 as ttl_ms`);
  // Expired windows are dead rows; sweep them now and then instead of on every request.
  if (Math.random() < 0.01)
    void pool
      .query(sql.unsafe`delete from rate_limit_counters where resets_at < now() - interval '1 hour'`)
      .catch(ignoreError('opportunistic purge of old counters; the next one retries'));
  return { current: row.hits, ttl: row.ttl_ms };
}

/** What the counter store reports when it cannot count (its database is away or failing). */
interface StoreFailure {
  (error: Error): Error;
}

function pgStore(pool: DatabasePool, onFailure: StoreFailure, prefix = ''): new () => FastifyRateLimitStore {
  return class PgRateLimitStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      hit(pool, prefix + key, timeWindow).then(
        (r) => callback(null, r),
        (error: Error) => callback(onFailure(error)),
      );
    }
    child(routeOptions: { routeOptions?: { url?: string }; path?: string; url?: string }): FastifyRateLimitStore {
      const Child = pgStore(pool, onFailure, `${prefix}${routeOptions.path ?? routeOptions.url ?? ''}:`);
      return new Child();
    }
  };
}

/**
 * When the counters cannot be read: `allow` lets the request through uncounted (availability first: a database
 * hiccup must not lock every user out), `refuse` answers 503 (a deployment that relies on the limit to protect
 * something behind it). Either way it is logged and counted, so a limit that silently stopped holding shows.
 */
export type OnStoreError = 'allow' | 'refuse';

export interface RateLimitOptions {
  pool: DatabasePool;
  /** Requests per window for a client, for requests outside every class. */
  max: number;
  windowSeconds: number;
  /**
   * Budgets of their own: a request of a class counts against that class's ceiling only (so a burst of downloads
   * does not use up the budget for everything else), on the same window. `of` names the class, or undefined.
   */
  classes?: { of(request: FastifyRequest): string | undefined; max: Record<string, number> };
  /** Counter key namespace: the service name, so two services sharing a database never share a counter. */
  namespace: string;
  onStoreError?: OnStoreError;
}

const LOG_EVERY_MS = 10_000;

/** The client a counter belongs to: its address, or its /56 for IPv6 (one subscriber's prefix, as the plugin does). */
export function clientKey(ip: string): string {
  if (!isIPv6(ip)) return ip.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  const words = groups.map((g) => Number.parseInt(g || '0', 16));
  const prefix = [words[0], words[1], words[2], (words[3] ?? 0) & 0xff00].map((w) => (w ?? 0).toString(16));
  return `${prefix.join(':')}::/56`;
}

/** Logs the first store error and then at most one per interval (an outage fails every request), with a count. */
function throttledWarning(log: FastifyBaseLogger, onStoreError: OnStoreError) {
  let lastLogged = 0;
  let suppressed = 0;
  return (error: Error) => {
    const now = Date.now();
    if (now - lastLogged < LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    log.warn(
      { err: error, suppressed, onStoreError },
      `rate limiting cannot count requests; ${onStoreError === 'allow' ? 'letting them through uncounted' : 'refusing them with 503'}`,
    );
    lastLogged = now;
    suppressed = 0;
  };
}

export async function installRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  const onStoreError = options.onStoreError ?? 'allow';
  const storeErrors = new Counter({
    name: 'boxyard_rate_limit_store_errors_total',
    help: 'Requests whose rate-limit counter could not be updated, by what was done with them (allowed uncounted or refused).',
    labelNames: ['outcome'] as const,
    registers: [app.metrics],
  });
  const refusals = new Counter({
    name: 'boxyard_rate_limit_refusals_total',
    help: 'Requests refused with 429 because the client exceeded its rate limit.',
    registers: [app.metrics],
  });
  const warn = throttledWarning(app.log, onStoreError);
  const classes = options.classes;
  const onFailure: StoreFailure = (error) => {
    storeErrors.inc({ outcome: onStoreError === 'allow' ? 'allowed' : 'refused' });
    warn(error);
    // With skipOnError the plugin drops this error and serves the request; otherwise it is the answer.
    return onStoreError === 'allow'
      ? error
      : new HttpError(503, 'Rate limiting is unavailable; try again shortly', { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } });
  };
  await app.register(rateLimit, {
    global: true,
    max: classes ? (request) => classes.max[classes.of(request) ?? ''] ?? options.max : options.max,
    ...(classes ? { keyGenerator: (request: FastifyRequest) => `${classes.of(request) ?? 'all'}:${clientKey(request.ip)}` } : {}),
    timeWindow: options.windowSeconds * 1000,
    enableDraftSpec: true,
    store: pgStore(options.pool, onFailure, `${options.namespace}:`) as never,
    skipOnError: onStoreError === 'allow',
    onExceeded: () => refusals.inc(),
    errorResponseBuilder: (request, context) => {
      const budget = classes?.of(request);
      return new HttpError(
        429,
        `Rate limit exceeded: ${context.max} ${budget ? `${budget} ` : ''}requests per ${Math.round(options.windowSeconds)} s; retry in ${context.after}`,
      );
    },
  });
}
