// Config sections every service shares. Services compose them into their own schema.
import { z } from 'zod';

const port = z.number().int().min(0).max(65535);

/**
 * Which X-Forwarded-* values to believe (client address for rate limits and logs, scheme and host for links):
 * `false` none; the proxies' addresses/CIDRs (safest: only they are believed); or a number of proxy hops in front
 * of the service (1 behind one Ingress controller) — which believes whoever connects, so use it only where the
 * port is reachable through those proxies alone. `true` (every hop) is refused: any client could pick its address.
 */
export const trustProxySchema = z
  .union([z.boolean(), z.number().int().min(1).max(16), z.array(z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()])).min(1)])
  .transform((value, context) => {
    if (value !== true) return value;
    context.addIssue({
      code: 'custom',
      message:
        'true would trust every X-Forwarded-For hop, so any client could pick its address; give the number of proxies in front of the service (e.g. 1 behind an Ingress) or their addresses',
    });
    return z.NEVER;
  });
export type TrustProxy = z.output<typeof trustProxySchema>;

/**
 * Slow and abandoned clients are cut by their progress, never by a total time, so an upload of many GiB takes as
 * long as it needs: the header block must arrive within `headers_seconds`; a request body must deliver at least
 * `body_min_bytes` in every `body_window_seconds` (while the service is not the one holding it back); a connection
 * on which nothing moves for `idle_seconds` while the service waits on the client (for more of the request, for it
 * to read the answer, or between requests) is closed.
 */
export const timeoutsSchema = z
  .strictObject({
    headers_seconds: z.number().positive().max(600).default(30),
    body_window_seconds: z.number().positive().max(3600).default(30),
    body_min_bytes: z.number().int().min(1).max(1_073_741_824).default(8192),
    idle_seconds: z.number().positive().max(86_400).default(120),
  })
  .prefault({});
export type ServerTimeouts = z.output<typeof timeoutsSchema>;

/**
 * Stopping (http/graceful-stop.ts): readiness turns 503 at once; the listener keeps serving for `delay_seconds`
 * (load balancers catching up), then closes; in-flight requests get `grace_seconds` to finish. One machine's
 * default fits systemd's 90 s stop timeout; the operator sets both from the resource's
 * terminationGracePeriodSeconds and its preStop wait.
 */
export const shutdownSchema = z
  .strictObject({
    delay_seconds: z.number().min(0).max(300).default(0),
    grace_seconds: z.number().min(0).max(86_400).default(60),
  })
  .prefault({});

export const serverSchema = z.strictObject({
  host: z.string().min(1).default('127.0.0.1'),
  port,
  /** The address users reach the service at (links, OpenAPI `servers`); defaults to the listener's. */
  public_url: z.url({ protocol: /^https?$/ }).optional(),
  tls: z
    .strictObject({
      enabled: z.boolean().default(false),
      cert: z.string().optional(),
      key: z.string().optional(),
    })
    .prefault({}),
  trust_proxy: trustProxySchema.default(false),
  body_limit_bytes: z.number().int().positive().default(1_048_576),
  timeouts: timeoutsSchema,
  shutdown: shutdownSchema,
});

/**
 * `/metrics` is served on a listener of its own (never the public port, which an Ingress routes): loopback by
 * default. `port`: default the service's own metrics port (9300-9303), or an OS-chosen one when `server.port` is 0.
 * `database_cache_seconds`: gauges read from PostgreSQL run their SQL at most once per this many seconds.
 */
export const metricsSchema = z.strictObject({
  host: z.string().min(1).default('127.0.0.1'),
  port: port.optional(),
  database_cache_seconds: z.number().int().min(1).max(3600).default(15),
});

export const loggingSchema = z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).prefault({});

export const databaseSchema = z.strictObject({
  url: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'),
  /** Each service keeps its tables in its own schema. */
  schema: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
    .optional(),
  pool_size: z.number().int().min(1).max(100).default(10),
});

export const storageSchema = z.discriminatedUnion('driver', [
  z.strictObject({ driver: z.literal('local'), root: z.string().min(1) }),
  z.strictObject({
    driver: z.literal('s3'),
    endpoint: z.url({ protocol: /^https?$/ }),
    access_key: z.string().min(1),
    secret_key: z.string().min(1),
    bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name'),
    region: z.string().default('us-east-1'),
    prefix: z.string().default(''),
  }),
]);

export const rateLimitSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    max_requests: z.number().int().positive().default(100),
    window_seconds: z.number().int().positive().default(600),
    /** When the shared counters cannot be read: let requests through uncounted, or refuse them with 503. */
    on_store_error: z.enum(['allow', 'refuse']).default('allow'),
  })
  .prefault({});

export const sessionSchema = z.strictObject({
  /** HS256 signing secret: at least 32 bytes, generated by `boxyard dev` and the operator, never shipped. */
  secret: z.string().min(32, 'must be at least 32 characters (256 bits)'),
  /** Older secrets still accepted for verification while sessions signed with them expire (rotation). */
  previous_secrets: z.array(z.string().min(32)).default([]),
  issuer: z.string().min(1),
  audience: z.string().min(1),
  ttl_seconds: z.number().int().positive().default(3600),
});

export type ServerConfig = z.output<typeof serverSchema>;
export type MetricsConfig = z.output<typeof metricsSchema>;

/** Where /metrics listens: metrics.port, else the service's default, or OS-chosen when the public port is (0). */
export const metricsListenOptions = (metrics: MetricsConfig, publicPort: number, defaultPort: number) => ({
  host: metrics.host,
  port: metrics.port ?? (publicPort === 0 ? 0 : defaultPort),
});
export type DatabaseConfig = z.output<typeof databaseSchema>;
export type StorageConfig = z.output<typeof storageSchema>;
export type RateLimitConfig = z.output<typeof rateLimitSchema>;
export type SessionConfig = z.output<typeof sessionSchema>;
