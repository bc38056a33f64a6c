// GET /events: server-sent events. Every event carries `id:` (its row id in PostgreSQL); a client reconnecting
// with Last-Event-ID (to this or any other replica) first receives what it missed from the table, then live
// events, without gaps or duplicates. A comment line every `events.heartbeat_seconds` keeps proxies from
// closing the stream. The caller's access is re-read while the stream lasts — at each heartbeat, at once when a
// notification names its session, user or key (sign-out, account or key changed, on any replica), and at the
// expiry of its token or key — so only events about paths the caller may read *now* are sent, and the stream
// ends (after an `access-ended` event saying why) once its credential has ended or lost `downloads`.
import type { OutgoingHttpHeaders } from 'node:http';
import { createStreamLimits, type AccountChange } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Gauge } from '@prometheus-io/client';
import type { Authenticator } from '../auth/authenticate.ts';
import { requirePermission, type Principal } from '../auth/principal.ts';
import type { EventBus } from './event-bus.ts';
import { closeStream, createEventStream, replayMissed, startLive, watchAccess, type EventStream } from './event-stream.ts';

export interface EventRoutesOptions {
  bus: EventBus;
  authenticator: Authenticator;
  heartbeatSeconds: number;
  /** Open streams per user (API key, anonymous address) and in all on this replica (events.max_streams*). */
  maxStreamsPerUser: number;
  maxStreams: number;
  /** Reconnection delay suggested to clients (`retry:`). */
  retryMs?: number;
  /** Account and key changes (the kit's account watch). */
  changes?: { subscribe(listener: (change: AccountChange) => void): () => void };
}

/** Whose slot a stream takes: its user, else its key, else (anonymous reads) its address. */
const holderOf = (principal: Principal, address: string) =>
  principal.user ? `user:${principal.user.id}` : principal.key ? `key:${principal.key.id}` : `address:${address}`;

const eventsSchema = {
  summary: 'Live events (text/event-stream)',
  description:
    'Events: `checksum-update` {filePath, checksum, size, mtime}, `file-deleted` {filePath, isDirectory}, ' +
    '`folder-created` {folderPath}, `file-renamed` {oldPath, newPath, isDirectory}; `resync` {reason} when a ' +
    'resume point is older than the retention; `access-ended` {reason} just before the stream ends because the ' +
    "caller's credential ended (signed out, expired, key deleted, account disabled) or lost the downloads " +
    'permission (reconnecting then gets 401/403). Send `Last-Event-ID` (or `?lastEventId=`) to resume.',
  tags: ['events'],
  querystring: { type: 'object', properties: { lastEventId: { type: 'string', pattern: '^[0-9]{1,18}$' } } },
  response: {
    200: {
      description: 'The event stream (`event:`, `id:`, `data:` JSON; `:` heartbeat comments), open until the client leaves or its credential ends',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    },
    401: {},
    403: {},
  },
};

interface StreamDeps {
  options: EventRoutesOptions;
  limits: ReturnType<typeof createStreamLimits>;
  subscribers: Gauge;
  open: Set<EventStream>;
}

/** What a stream hears when this replica stops: come back soon (to another replica), resuming with Last-Event-ID. */
const STOPPING_RETRY_MS = 500;

export async function eventRoutes(app: FastifyInstance, options: EventRoutesOptions): Promise<void> {
  const limits = createStreamLimits({ what: 'event streams', perHolder: options.maxStreamsPerUser, total: options.maxStreams });
  const subscribers = new Gauge({ name: 'boxyard_sse_subscribers', help: 'Clients connected to GET /events on this replica.', registers: [app.metrics] });
  const deps: StreamDeps = { options, limits, subscribers, open: new Set() };
  app.get('/events', { schema: eventsSchema }, (request, reply) => streamEvents(request, reply, deps));
  // An open stream holds its connection forever: when the listener stops, end each with a short retry hint, so
  // the client reconnects at once elsewhere and replays what it missed (graceful-stop.ts).
  app.addHook('preClose', async () => {
    for (const stream of deps.open) {
      stream.raw.write(`retry: ${STOPPING_RETRY_MS}\n: server stopping; reconnect with Last-Event-ID\n\n`);
      closeStream(stream);
    }
  });
}

/** The id to resume after: the Last-Event-ID header when well formed, else `?lastEventId=`. */
function resumePoint(request: FastifyRequest): number | undefined {
  const lastEventHeader = request.headers['last-event-id'];
  const header = Array.isArray(lastEventHeader) ? lastEventHeader[0] : lastEventHeader;
  const resumeFrom = header !== undefined && /^\d{1,18}$/.test(header.trim()) ? Number(header.trim()) : (request.query as { lastEventId?: string }).lastEventId;
  return resumeFrom === undefined ? undefined : Number(resumeFrom);
}

async function streamEvents(request: FastifyRequest, reply: FastifyReply, { options, limits, subscribers, open }: StreamDeps) {
  const principal = request.principal;
  requirePermission(principal, 'downloads', principal.scope);
  // HEAD answers what a GET would, then ends: node sends a HEAD response's headers only when it ends, so a
  // stream would keep the client waiting with no answer and a subscription open here.
  if (request.method === 'HEAD')
    return reply.status(200).headers({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' }).send();
  const lastId = resumePoint(request);

  // Before anything is written: over a cap the answer is still a plain 429/503 in the envelope.
  const release = limits.claim(holderOf(principal, request.ip));
  reply.hijack();
  const raw = reply.raw;
  raw.once('close', release);
  raw.writeHead(200, {
    // What the hooks set on the reply before the hijack (RateLimit-*, like every other route), then the stream's own.
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
  });
  raw.write(`retry: ${options.retryMs ?? 3000}\n: connected\n\n`);

  subscribers.inc();
  const stream = createEventStream(raw, principal, lastId, { options, subscribers, release });
  open.add(stream);
  raw.once('close', () => open.delete(stream));
  watchAccess(stream);
  startLive(stream);
  const close = () => closeStream(stream);
  request.raw.on('close', close);
  raw.on('error', close);
  if (lastId !== undefined) await replayMissed(stream, request.log);
}
