// GET /events: server-sent events. Every event carries `id:` (its row id in PostgreSQL); a client reconnecting
// with Last-Event-ID (to this or any other replica) first receives what it missed from the table, then live
// events, without gaps or duplicates. A comment line every `events.heartbeat_seconds` keeps proxies from
// closing the stream, and the caller's credentials are checked again at each heartbeat (a revoked key or an
// ended session ends the stream). Only events about paths the caller may read are sent.
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticate.ts';
import { mayRead, requirePermission } from '../auth/principal.ts';
import type { EventBus } from './event-bus.ts';
import type { ShareEvent } from './event-types.ts';

export interface EventRoutesOptions {
  bus: EventBus;
  authenticator: Authenticator;
  heartbeatSeconds: number;
  /** Reconnection delay suggested to clients (`retry:`). */
  retryMs?: number;
}

/** A client that can't keep up is disconnected (it resumes with Last-Event-ID) rather than buffered forever. */
const maxQueuedEvents = 10_000;
const maxBufferedBytes = 8 * 1024 * 1024;

const frame = (event: ShareEvent) => `id: ${event.id}\nevent: ${event.name}\ndata: ${JSON.stringify(event.data)}\n\n`;

export async function eventRoutes(app: FastifyInstance, options: EventRoutesOptions): Promise<void> {
  app.get(
    '/events',
    {
      schema: {
        summary: 'Live events (text/event-stream)',
        description:
          'Events: `checksum-update` {filePath, checksum, size, mtime}, `file-deleted` {filePath, isDirectory}, ' +
          '`folder-created` {folderPath}, `file-renamed` {oldPath, newPath, isDirectory}; `resync` {reason} when a ' +
          'resume point is older than the retention. Send `Last-Event-ID` (or `?lastEventId=`) to resume.',
        tags: ['events'],
        querystring: { type: 'object', properties: { lastEventId: { type: 'string', pattern: '^[0-9]{1,18}$' } } },
      },
    },
    async (request, reply) => {
      const principal = request.principal;
      requirePermission(principal, 'downloads', principal.scope);
      // HEAD answers what a GET would, then ends: node sends a HEAD response's headers only when it ends, so a
      // stream would keep the client waiting with no answer and a subscription open here.
      if (request.method === 'HEAD') return reply.status(200).headers({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' }).send();
      const lastEventHeader = request.headers['last-event-id'];
      const header = Array.isArray(lastEventHeader) ? lastEventHeader[0] : lastEventHeader;
      const resumeFrom = header !== undefined && /^\d{1,18}$/.test(header.trim()) ? Number(header.trim()) : (request.query as { lastEventId?: string }).lastEventId;
      const lastId = resumeFrom === undefined ? undefined : Number(resumeFrom);

      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
      });
      raw.write(`retry: ${options.retryMs ?? 3000}\n: connected\n\n`);

      let sentUpTo = lastId ?? 0;
      let replaying = lastId !== undefined;
      const pending: ShareEvent[] = [];
      let closed = false;

      const close = () => {
        if (closed) return;
        closed = true;
        unsubscribe();
        clearInterval(heartbeat);
        raw.end();
      };

      const deliver = (event: ShareEvent) => {
        if (closed || event.id <= sentUpTo) return;
        sentUpTo = event.id;
        if (!event.paths.some((path) => mayRead(principal, path))) return;
        if (raw.writableLength > maxBufferedBytes) return close();
        raw.write(frame(event));
      };

      // `close` runs only from the callbacks below, so both constants exist by then.
      const heartbeat = setInterval(() => {
        void options.authenticator.stillValid(principal).then(
          (valid) => {
            if (!valid) close();
            else if (!closed) raw.write(`: heartbeat ${new Date().toISOString()}\n\n`);
          },
          () => {
            if (!closed) raw.write(': heartbeat\n\n');
          },
        );
      }, options.heartbeatSeconds * 1000);
      heartbeat.unref();
      // Subscribed before the replay reads the table: whatever commits meanwhile is queued, then de-duplicated by id.
      const unsubscribe = options.bus.subscribe((event) => {
        if (!replaying) return deliver(event);
        pending.push(event);
        if (pending.length > maxQueuedEvents) close();
      });
      request.raw.on('close', close);
      raw.on('error', close);

      if (lastId !== undefined) {
        try {
          let page = await options.bus.replay(sentUpTo);
          if (!page.complete) {
            raw.write(`event: resync\ndata: ${JSON.stringify({ reason: 'the resume point is no longer (or not) in the event history; list the share again' })}\n\n`);
            if (sentUpTo > page.latestId) sentUpTo = page.latestId; // an id from elsewhere: go on from now
          }
          while (page.events.length > 0 && !closed) {
            for (const event of page.events) deliver(event);
            page = await options.bus.replay(sentUpTo);
          }
        } catch (error) {
          request.log.warn({ err: error }, 'event replay failed');
          close();
          return;
        }
        replaying = false;
        for (const event of pending.splice(0)) deliver(event);
      }
    },
  );
}
