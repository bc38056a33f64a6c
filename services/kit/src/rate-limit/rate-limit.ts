// @fastify/rate-limit with a PostgreSQL store, so the limit holds across replicas. Headers follow the
// IETF draft (RateLimit-Limit / -Remaining / -Reset, Retry-After on 429).
import { fileURLToPath } from 'node:url';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { HttpError } from '../http/http-error.ts';
import type { MigrationSource } from '../db/migrate.ts';

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
  if (Math.random() < 0.01) void pool.query(sql.unsafe`delete from rate_limit_counters where resets_at < now() - interval '1 hour'`).catch(() => {});
  return { current: row.hits, ttl: row.ttl_ms };
}

function pgStore(pool: DatabasePool, prefix = ''): new () => FastifyRateLimitStore {
  return class PgRateLimitStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      hit(pool, prefix + key, timeWindow).then((r) => callback(null, r), (error: Error) => callback(error));
    }
    child(routeOptions: { routeOptions?: { url?: string }; path?: string; url?: string }): FastifyRateLimitStore {
      const Child = pgStore(pool, `${prefix}${routeOptions.path ?? routeOptions.url ?? ''}:`);
      return new Child();
    }
  };
}

export interface RateLimitOptions {
  pool: DatabasePool;
  max: number;
  windowSeconds: number;
  /** Counter key namespace: the service name, so two services sharing a database never share a counter. */
  namespace: string;
}

export async function installRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: options.max,
    timeWindow: options.windowSeconds * 1000,
    enableDraftSpec: true,
    store: pgStore(options.pool, `${options.namespace}:`) as never,
    // A database hiccup must not lock users out; the request goes on and the error is logged.
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      new HttpError(429, `Rate limit exceeded: ${context.max} requests per ${Math.round(options.windowSeconds)} s; retry in ${context.after}`),
  });
}
