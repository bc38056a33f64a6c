// Public information, no credentials needed: /api/status (what is running), /api/health (can it serve: database
// and storage), /api/rules (what a password and a name must look like, and the limits), /api/discover (how to
// authenticate, the identity provider if any, the limits, where the API description is).
import { MIN_PASSWORD_LENGTH, pingDatabase } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf } from '../http/base-url.ts';
import { RESERVED_ORGANIZATION_NAMES, SLUG_DETAIL, SLUG_PATTERN, VERSION_DETAIL, VERSION_PATTERN } from '../http/schemas.ts';
import { describeLimits } from '../limits/classes.ts';
import { SERVICE_NAME } from '../config.ts';

const HEALTH_TIMEOUT_MS = 3000;
const open = { type: 'object', additionalProperties: true } as const;
const obj = (properties: Record<string, unknown>, required = Object.keys(properties)) =>
  ({ type: 'object', properties, required, additionalProperties: false }) as const;
const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;

const statusSchema = obj({
  service: str,
  version: str,
  status: { type: 'string', enum: ['ok'] },
  started_at: { type: 'string', format: 'date-time' },
  uptime_seconds: int,
  https: { type: 'boolean' },
  setup: { type: 'string', description: 'Where setup stands: GET /api/setup/status' },
});
const healthSchema = obj({
  status: { type: 'string', enum: ['ok', 'unavailable'] },
  checks: obj({ database: { type: 'string', enum: ['ok', 'failing'] }, storage: { type: 'string', enum: ['ok', 'failing'] } }),
});
const limitsSchema = obj({ rate_limiting: open, uploads: open, download_links: open });
const rulesSchema = obj({ password: open, naming: open, limits: limitsSchema });
const discoverSchema = obj({
  service: str,
  version: str,
  base_url: str,
  auth: obj({ methods: { type: 'array', items: str }, session_header: str, sign_in: str, provider: { anyOf: [{ type: 'null' }, open] } }),
  limits: limitsSchema,
  openapi: str,
  docs: str,
});

async function check(probe: () => Promise<unknown>): Promise<'ok' | 'failing'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([probe(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), HEALTH_TIMEOUT_MS)))]);
    return 'ok';
  } catch {
    return 'failing';
  } finally {
    clearTimeout(timer);
  }
}

export async function statusRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const version = ctx.version;
  app.get(
    '/api/status',
    {
      schema: { tags: ['status'], summary: 'What is running: service, version, since when, whether HTTPS is served', response: { 200: statusSchema } },
    },
    async () => ({
      service: SERVICE_NAME,
      version,
      status: 'ok' as const,
      started_at: ctx.startedAt.toISOString(),
      uptime_seconds: Math.floor((Date.now() - ctx.startedAt.getTime()) / 1000),
      https: ctx.tls !== undefined,
      setup: '/api/setup/status',
    }),
  );

  app.get(
    '/api/health',
    {
      schema: {
        tags: ['status'],
        summary: 'Whether the service can serve: its database and its storage (503 when one fails)',
        response: { 200: healthSchema, 503: healthSchema },
      },
    },
    async (_request, reply) => {
      const [database, storage] = await Promise.all([check(() => pingDatabase(ctx.pool)), check(() => ctx.store.check())]);
      const ok = database === 'ok' && storage === 'ok';
      return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks: { database, storage } });
    },
  );

  app.get(
    '/api/rules',
    {
      schema: { tags: ['status'], summary: 'Password and naming rules, and the limits', response: { 200: rulesSchema } },
    },
    async () => ({
      password: {
        min_length: MIN_PASSWORD_LENGTH,
        required: ['uppercase', 'lowercase', 'digit'],
        special_characters: 'recommended',
        common_passwords_refused: true,
      },
      naming: {
        organization: { pattern: SLUG_PATTERN, detail: SLUG_DETAIL, reserved: RESERVED_ORGANIZATION_NAMES },
        box: { pattern: SLUG_PATTERN, detail: SLUG_DETAIL },
        version: { pattern: VERSION_PATTERN, detail: VERSION_DETAIL },
        provider: { pattern: SLUG_PATTERN, detail: SLUG_DETAIL },
        architecture: { pattern: SLUG_PATTERN, detail: SLUG_DETAIL },
        username: {
          pattern: '^[A-Za-z0-9_.-]{1,64}$',
          detail: 'letters, digits, ".", "_" and "-", 1 to 64 characters; "sa-" is reserved for service accounts',
        },
      },
      limits: describeLimits(ctx.config),
    }),
  );

  app.get(
    '/api/discover',
    {
      schema: {
        tags: ['status'],
        summary: 'How to talk to this service: authentication methods, the identity provider (if any), limits',
        response: { 200: discoverSchema },
      },
    },
    async (request) => {
      const server = ctx.config.auth.resource_server;
      return {
        service: SERVICE_NAME,
        version,
        base_url: baseUrlOf(ctx, request),
        auth: {
          methods: ['password', 'session_token', 'service_account_key', ...(server.enabled ? ['provider_token'] : [])],
          session_header: 'x-access-token',
          sign_in: '/api/auth/signin',
          provider: server.enabled
            ? { issuer: server.issuer ?? null, audience: server.audience ?? null, schemes: server.dpop.required ? ['DPoP'] : ['Bearer', 'DPoP'] }
            : null,
        },
        limits: describeLimits(ctx.config),
        openapi: '/openapi.json',
        docs: '/api-docs',
      };
    },
  );
}
