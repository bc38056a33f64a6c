// Webhook administration (global admins): subscribe a URL to events, list and remove subscriptions, and read a
// webhook's delivery log (every attempt: when, how long, the answer or the error). The secret is write-only: it
// is returned by the creation (generated when none is given) and never again.
import { conflict, notFound, unprocessable } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { requireGlobalAdmin } from '../access/permissions.ts';
import { requirePrincipal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { body, errors, params, text } from '../http/schemas.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { int8, messageSchema } from '../records.ts';
import { WEBHOOK_EVENTS } from './event-types.ts';
import { generateSecret } from './signature.ts';
import { isPublicAddress, literalAddress } from './target-address.ts';

const URL_MAX = 2048;
const time = z
  .string()
  .nullable()
  .transform((value) => (value === null ? null : new Date(value).toISOString()));
const webhookRow = z.object({ id: int8, url: z.string(), events: z.array(z.string()), description: z.string(), created_at: time });

const webhookProperties = {
  id: { type: 'integer' },
  url: { type: 'string' },
  events: { type: 'array', items: { type: 'string' } },
  description: { type: 'string' },
  created_at: { type: 'string', format: 'date-time' },
} as const;
const webhookSchema = { type: 'object', properties: webhookProperties, required: Object.keys(webhookProperties), additionalProperties: false } as const;
const createdSchema = {
  ...webhookSchema,
  properties: { ...webhookProperties, secret: { type: 'string', description: 'The signing secret: shown only in this answer.' } },
  required: [...webhookSchema.required, 'secret'],
} as const;

const attemptSchema = {
  type: 'object',
  properties: {
    attempt: { type: 'integer' },
    started_at: { type: 'string', format: 'date-time' },
    duration_ms: { type: 'integer' },
    status_code: { type: ['integer', 'null'] },
    error: { type: ['string', 'null'] },
  },
  required: ['attempt', 'started_at', 'duration_ms', 'status_code', 'error'],
  additionalProperties: false,
} as const;
const deliveryProperties = {
  id: { type: 'string', description: 'Sent as the `webhook-id` header: the same on every retry.' },
  event_id: { type: 'integer' },
  event: { type: 'string' },
  data: { type: 'object', additionalProperties: true },
  status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
  attempts: { type: 'integer' },
  next_attempt_at: { type: ['string', 'null'], format: 'date-time', description: 'When a pending delivery is tried next.' },
  last_status_code: { type: ['integer', 'null'] },
  last_error: { type: ['string', 'null'] },
  created_at: { type: 'string', format: 'date-time' },
  finished_at: { type: ['string', 'null'], format: 'date-time' },
  attempt_log: { type: 'array', items: attemptSchema },
} as const;
const deliverySchema = { type: 'object', properties: deliveryProperties, required: Object.keys(deliveryProperties), additionalProperties: false } as const;

interface AttemptRow {
  attempt: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}
const deliveryRow = z.object({
  id: z.string(),
  event_id: int8,
  event: z.string(),
  data: z.string().transform((value) => JSON.parse(value) as Record<string, unknown>),
  status: z.string(),
  attempts: z.number(),
  next_attempt_at: time,
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: time,
  finished_at: time,
  attempt_log: z.string().transform((value) => (JSON.parse(value) as AttemptRow[]).map((a) => ({ ...a, started_at: new Date(a.started_at).toISOString() }))),
});

const selectWebhooks = sql.fragment`
  select id, url, events, description, to_jsonb(created_at) #>> '{}' as created_at from webhooks`;

const selectDeliveries = sql.fragment`
  select d.id::text as id, d.event_id, e.type as event, e.data::text as data, d.status, d.attempts,
         case when d.status = 'pending' then to_jsonb(d.next_attempt_at) #>> '{}' end as next_attempt_at,
         d.last_status_code, d.last_error, to_jsonb(d.created_at) #>> '{}' as created_at, to_jsonb(d.finished_at) #>> '{}' as finished_at,
         coalesce((select jsonb_agg(jsonb_build_object('attempt', a.attempt, 'started_at', a.started_at, 'duration_ms', a.duration_ms,
                                                       'status_code', a.status_code, 'error', a.error) order by a.attempt)
                   from webhook_delivery_attempts a where a.delivery_id = d.id), '[]')::text as attempt_log
  from webhook_deliveries d join events e on e.id = d.event_id`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const idOf = (raw: string) => (/^\d{1,15}$/.test(raw) ? Number(raw) : 0);

async function requireAdmin(ctx: ServiceContext, request: Parameters<typeof requirePrincipal>[1]): Promise<void> {
  const principal = await requirePrincipal(ctx, request);
  requireGlobalAdmin({ principal, isGlobalAdmin: principal.kind === 'user' && principal.isAdmin });
}

/** The target, if it can be used: http(s), no credentials in it, and not a non-public address literal. */
function checkUrl(raw: string, allowPrivate: boolean): string {
  const refuse = (rule: string, detail: string) => unprocessable('The webhook URL cannot be used', [{ pointer: '/url', rule, params: {}, detail }]);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('format', 'must be an absolute http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('format', 'must be an absolute http:// or https:// URL');
  if (url.username || url.password)
    throw refuse('no_credentials', 'must not carry a user name or password (they would show in logs): verify the signature instead');
  const literal = literalAddress(url);
  if (literal && !allowPrivate && !isPublicAddress(literal)) {
    throw refuse('public_address', `${literal} is not a public address; webhooks may reach such targets only when webhooks.allow_private_targets is on`);
  }
  return url.toString();
}

export async function webhookRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  createWebhookRoute(app, ctx);
  listWebhooksRoute(app, ctx);
  getWebhookRoute(app, ctx);
  deleteWebhookRoute(app, ctx);
  deliveryLogRoute(app, ctx);
  redeliverRoute(app, ctx);
}

function createWebhookRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const { pool } = ctx;
  const allowPrivate = ctx.config.webhooks.allow_private_targets;
  app.post<{ Body: { url: string; events: string[]; secret?: string; description?: string } }>(
    '/api/admin/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary:
          'Subscribe a URL to events (global admins). Deliveries are POSTed as {event, data}, signed with the secret (x-boxyard-signature and Standard Webhooks headers)',
        body: body(
          {
            url: { type: 'string', minLength: 1, maxLength: URL_MAX, description: 'http:// or https:// URL; redirects are not followed.' },
            events: { type: 'array', minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true, items: { type: 'string', enum: [...WEBHOOK_EVENTS] } },
            secret: {
              type: 'string',
              minLength: 16,
              maxLength: 256,
              pattern: '^[\\x21-\\x7e]+$',
              description:
                'Signing secret (printable ASCII, 16 to 256 characters; a `whsec_<base64>` secret is used as Standard Webhooks defines). Generated when left out.',
            },
            description: text(1000),
          },
          ['url', 'events'],
        ),
        response: { 201: createdSchema, ...errors(401, 403, 422) },
      },
    },
    async (request, reply) => {
      await requireAdmin(ctx, request);
      const input = request.body;
      const url = checkUrl(input.url, allowPrivate);
      const secret = input.secret ?? generateSecret();
      const principal = await requirePrincipal(ctx, request);
      const created = await pool.one(sql.type(webhookRow)`
      insert into webhooks (url, events, secret, description, created_by)
      values (${url}, ${sql.array(input.events, 'text')}, ${secret}, ${input.description ?? ''}, ${principal.kind === 'user' ? principal.id : null}::uuid)
      returning id, url, events, description, to_jsonb(created_at) #>> '{}' as created_at`);
      return reply.status(201).send({ ...created, secret });
    },
  );
}

function listWebhooksRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const { pool } = ctx;
  app.get<{ Querystring: { page?: number; per_page?: number } }>(
    '/api/admin/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'The webhooks (global admins); secrets are never shown',
        // Unknown query members are ignored, as on every route: `?access_token=` is a credential here too.
        querystring: { type: 'object', properties: paginationQuery },
        response: { 200: { type: 'array', items: webhookSchema }, ...errors(401, 403) },
      },
    },
    async (request, reply) => {
      await requireAdmin(ctx, request);
      const page = pageOf(request.query);
      const total = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from webhooks`);
      describePage(request, reply, page, total);
      return pool.any(sql.type(webhookRow)`${selectWebhooks} order by id limit ${page.limit} offset ${page.offset}`);
    },
  );
}

function getWebhookRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const { pool } = ctx;
  app.get<{ Params: { id: string } }>(
    '/api/admin/webhooks/:id',
    {
      schema: { tags: ['webhooks'], summary: 'One webhook (global admins)', params: params('id'), response: { 200: webhookSchema, ...errors(401, 403, 404) } },
    },
    async (request) => {
      await requireAdmin(ctx, request);
      const found = await pool.maybeOne(sql.type(webhookRow)`${selectWebhooks} where id = ${idOf(request.params.id)}`);
      if (!found) throw notFound(`Webhook ${request.params.id} not found`);
      return found;
    },
  );
}

function deleteWebhookRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const { pool } = ctx;
  app.delete<{ Params: { id: string } }>(
    '/api/admin/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Remove a webhook (global admins): nothing more is sent to it, its delivery log goes too',
        params: params('id'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      await requireAdmin(ctx, request);
      const deleted = await pool.maybeOne(sql.type(z.object({ url: z.string() }))`delete from webhooks where id = ${idOf(request.params.id)} returning url`);
      if (!deleted) throw notFound(`Webhook ${request.params.id} not found`);
      return { message: `Webhook ${request.params.id} (${deleted.url}) deleted` };
    },
  );
}

function deliveryLogRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const { pool } = ctx;
  app.get<{ Params: { id: string }; Querystring: { page?: number; per_page?: number; status?: string } }>(
    '/api/admin/webhooks/:id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        summary: "A webhook's delivery log, newest first, each delivery with every attempt (global admins)",
        params: params('id'),
        querystring: { type: 'object', properties: { ...paginationQuery, status: { type: 'string', enum: ['pending', 'delivered', 'failed'] } } },
        response: { 200: { type: 'array', items: deliverySchema }, ...errors(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await requireAdmin(ctx, request);
      const id = idOf(request.params.id);
      if (!(await pool.exists(sql.unsafe`select 1 from webhooks where id = ${id}`))) throw notFound(`Webhook ${request.params.id} not found`);
      const status = request.query.status;
      const filter = status ? sql.fragment`and d.status = ${status}` : sql.fragment``;
      const page = pageOf(request.query);
      const total = await pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`select count(*)::int as n from webhook_deliveries d where d.webhook_id = ${id} ${filter}`,
      );
      describePage(request, reply, page, total);
      return pool.any(sql.type(deliveryRow)`
      ${selectDeliveries}
      where d.webhook_id = ${id} ${filter}
      order by d.created_at desc, d.event_id desc
      limit ${page.limit} offset ${page.offset}`);
    },
  );
}

function redeliverRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const { pool } = ctx;
  app.post<{ Params: { id: string; delivery: string } }>(
    '/api/admin/webhooks/:id/deliveries/:delivery/redeliver',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Send a finished delivery (failed or delivered) again, with the same webhook-id, as soon as a worker is free (global admins)',
        params: params('id', 'delivery'),
        response: { 202: deliverySchema, ...errors(401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await requireAdmin(ctx, request);
      const id = idOf(request.params.id);
      const deliveryId = UUID.test(request.params.delivery) ? request.params.delivery : '00000000-0000-0000-0000-000000000000';
      // Only a finished delivery: a pending one may be in flight right now, and two sends of it must never overlap.
      const requeued = await pool.maybeOne(sql.type(z.object({ id: z.string() }))`
      update webhook_deliveries set status = 'pending', next_attempt_at = now(), finished_at = null
      where id = ${deliveryId}::uuid and webhook_id = ${id} and status <> 'pending' returning id::text as id`);
      if (!requeued) {
        const exists = await pool.exists(sql.unsafe`select 1 from webhook_deliveries where id = ${deliveryId}::uuid and webhook_id = ${id}`);
        if (!exists) throw notFound(`Delivery ${request.params.delivery} of webhook ${request.params.id} not found`);
        throw conflict('The delivery is pending: it is sent again at its next_attempt_at');
      }
      return reply.status(202).send(await pool.one(sql.type(deliveryRow)`${selectDeliveries} where d.id = ${deliveryId}::uuid`));
    },
  );
}
