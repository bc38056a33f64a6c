// POST /api/terminal/start, GET /api/terminal/sessions, DELETE /api/terminal/sessions/{id}/stop.
import { forbidden, notFound } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import type { AuditService } from '../audit/service.ts';
import type { Auth } from '../auth/plugin.ts';
import { envelope, errors, ok } from '../http/envelope.ts';
import type { SessionService } from './service.ts';
import type { SessionRow } from './store.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const websocketPath = (id: string) => `/ws/terminal/${id}`;

export function presentSession(row: SessionRow) {
  return {
    id: row.id,
    terminal_cookie: row.terminal_cookie,
    state: row.state,
    backend: row.backend,
    owner: { id: row.owner_id, username: row.owner_username },
    websocket_path: websocketPath(row.id),
    created_at: iso(row.created_at),
    last_activity_at: iso(row.last_activity_at),
    expires_at: iso(row.expires_at),
    ended_at: iso(row.ended_at),
    exit_code: row.exit_code,
    end_reason: row.end_reason,
  };
}

const dateTime = { type: 'string', format: 'date-time' };
export const sessionSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    terminal_cookie: { type: 'string' },
    state: { type: 'string', enum: ['starting', 'running', 'stopping', 'exited', 'stopped', 'failed'] },
    backend: { type: 'string', enum: ['local', 'kubernetes'] },
    owner: { type: 'object', required: ['id', 'username'], properties: { id: { type: 'string' }, username: { type: 'string' } } },
    websocket_path: { type: 'string' },
    created_at: dateTime,
    last_activity_at: dateTime,
    expires_at: dateTime,
    ended_at: { type: ['string', 'null'], format: 'date-time' },
    exit_code: { type: ['integer', 'null'] },
    end_reason: { type: ['string', 'null'] },
  },
};

// Not `format: uuid`: a malformed id names no session, so it is the seed's 404 "session does not exist", not a 400.
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', description: 'The session id (a UUID)' } } };

export function sessionRoutes(app: FastifyInstance, deps: { auth: Auth; sessions: SessionService; audit?: AuditService }): void {
  const { auth, sessions } = deps;
  const tags = ['terminal'];

  app.post<{ Body: { terminal_cookie: string } }>(
    '/api/terminal/start',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: 'Start a session, or reattach to the live session with this terminal_cookie',
        description:
          'Idempotent per (user, terminal_cookie): while a session with this cookie is live, it is returned (`reattached: true`) instead of a second shell. Then open the WebSocket at `websocket_path`.',
        body: {
          type: 'object',
          required: ['terminal_cookie'],
          additionalProperties: false,
          properties: { terminal_cookie: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[\\x21-\\x7e]+$' } },
        },
        response: {
          200: envelope({ type: 'object', properties: { session: sessionSchema, reattached: { type: 'boolean' }, websocket_path: { type: 'string' } } }),
          ...errors(400, 401, 403, 429, 503),
        },
      },
    },
    async (request) => {
      // The backend may refuse this caller (local backend that cannot give each user an account of its own).
      const refusal = sessions.refusal(request.user!);
      if (refusal) throw forbidden(refusal);
      const { session, reattached } = await sessions.start(request.user!, request.body.terminal_cookie);
      if (!reattached) deps.audit?.fromRequest(request, 'start', session);
      return ok(reattached ? 'Reattached to the live session' : 'Session started', {
        session: presentSession(session),
        reattached,
        websocket_path: websocketPath(session.id),
      });
    },
  );

  app.get<{ Querystring: { include_ended?: boolean } }>(
    '/api/terminal/sessions',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: "The terminal sessions: an admin's list has every user's session, a user's their own",
        description:
          'Each session names its `owner` (`id`, `username`). Live sessions (starting, running, stopping) unless `include_ended=true`, which adds ended ones (kept `sessions.retention_hours`); newest first.',
        querystring: { type: 'object', additionalProperties: false, properties: { include_ended: { type: 'boolean', default: false } } },
        response: { 200: envelope({ type: 'object', properties: { sessions: { type: 'array', items: sessionSchema } } }), ...errors(400, 401, 429) },
      },
    },
    async (request) => {
      const rows = await sessions.list(request.user!, request.query.include_ended ?? false);
      return ok(`${rows.length} session${rows.length === 1 ? '' : 's'}`, { sessions: rows.map(presentSession) });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/terminal/sessions/:id/stop',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: 'Stop a session: ends its shell and closes its sockets (owner, or an admin)',
        params: idParams,
        response: { 200: envelope({ type: 'object', properties: { session: sessionSchema } }), ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const row = await sessions.visible(request.user!, request.params.id);
      if (!row) throw notFound('Session does not exist');
      const wasLive = row.state === 'starting' || row.state === 'running';
      const stopped = (await sessions.stop(row.id)) ?? row;
      if (wasLive) deps.audit?.fromRequest(request, 'stop', stopped, { reason: 'stopped' });
      return ok(wasLive ? 'Session stopped' : `Session already ended (${stopped.state})`, { session: presentSession(stopped) });
    },
  );
}
