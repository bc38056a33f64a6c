// GET /api/terminal/audit (admins): audit events newest first, filtered and paged; GET /api/terminal/audit/export:
// the same filters as JSON lines (application/x-ndjson), at most EXPORT_MAX rows per request.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Auth } from '../auth/plugin.ts';
import { envelope, errors, ok } from '../http/envelope.ts';
import type { AuditService } from './service.ts';
import { AUDIT_EVENTS, type AuditEventName, type AuditFilter, type AuditRow } from './store.ts';

const PAGE_MAX = 500;
const EXPORT_MAX = 100_000;
const EXPORT_BATCH = 1000;

interface AuditQuery {
  user_id?: string;
  username?: string;
  session_id?: string;
  event?: AuditEventName;
  since?: string;
  until?: string;
  before?: number;
  limit?: number;
}

const filters = {
  user_id: { type: 'string', format: 'uuid' },
  username: { type: 'string', minLength: 1, maxLength: 128 },
  session_id: { type: 'string', format: 'uuid' },
  event: { type: 'string', enum: [...AUDIT_EVENTS] },
  since: { type: 'string', format: 'date-time' },
  until: { type: 'string', format: 'date-time' },
  before: {
    type: 'integer',
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'Only events older than this id (the `next_before` of the previous page).',
  },
};

export function presentAudit(row: AuditRow) {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    event: row.event,
    user: row.user_id || row.username ? { id: row.user_id, username: row.username } : null,
    session_id: row.session_id,
    address: row.address,
    user_agent: row.user_agent,
    resource: row.resource,
    detail: row.detail,
  };
}

const filterOf = (q: AuditQuery, limit: number): AuditFilter => ({
  userId: q.user_id,
  username: q.username,
  sessionId: q.session_id,
  event: q.event,
  since: q.since ? Date.parse(q.since) : undefined,
  until: q.until ? Date.parse(q.until) : undefined,
  before: q.before,
  limit,
});

export function auditRoutes(app: FastifyInstance, deps: { auth: Auth; audit: AuditService }): void {
  const { auth, audit } = deps;
  const tags = ['audit'];

  app.get<{ Querystring: AuditQuery }>(
    '/api/terminal/audit',
    {
      preHandler: auth.requireAdmin,
      schema: {
        tags,
        summary: 'Audit events of terminal sessions (admins): start, attach, detach, resize, stop, expiry; newest first',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...filters, limit: { type: 'integer', minimum: 1, maximum: PAGE_MAX, default: 100 } },
        },
        response: {
          200: envelope({
            type: 'object',
            properties: { events: { type: 'array', items: { type: 'object', additionalProperties: true } }, next_before: { type: ['integer', 'null'] } },
          }),
          ...errors(400, 401, 403, 429),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 100;
      const rows = await audit.store.page(filterOf(request.query, limit));
      return ok(`${rows.length} event${rows.length === 1 ? '' : 's'}`, {
        events: rows.map(presentAudit),
        next_before: rows.length === limit ? rows.at(-1)!.id : null,
      });
    },
  );

  app.get<{ Querystring: AuditQuery }>(
    '/api/terminal/audit/export',
    {
      preHandler: auth.requireAdmin,
      schema: {
        tags,
        summary: 'The audit events matching the filters as JSON lines (admins), newest first, at most 100000 per request',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...filters, limit: { type: 'integer', minimum: 1, maximum: EXPORT_MAX, default: EXPORT_MAX } },
        },
        response: {
          200: { description: 'One event (as in GET /api/terminal/audit) per line', content: { 'application/x-ndjson': { schema: { type: 'string' } } } },
          ...errors(400, 401, 403, 429),
        },
      },
    },
    async (request, reply) => {
      const total = request.query.limit ?? EXPORT_MAX;
      async function* lines() {
        let sent = 0;
        let before = request.query.before;
        while (sent < total) {
          const rows = await audit.store.page(filterOf({ ...request.query, ...(before ? { before } : {}) }, Math.min(EXPORT_BATCH, total - sent)));
          if (rows.length === 0) return;
          yield rows.map((row) => `${JSON.stringify(presentAudit(row))}\n`).join('');
          sent += rows.length;
          before = rows.at(-1)!.id;
        }
      }
      return reply
        .type('application/x-ndjson')
        .header('cache-control', 'no-store')
        .header('content-disposition', 'attachment; filename="terminal-audit.jsonl"')
        .send(Readable.from(lines()));
    },
  );
}
