// GET /events: server-sent events. Every event carries `id:` (its row id in PostgreSQL); a client reconnecting
// with Last-Event-ID (to this or any other replica) first receives what it missed from the table, then live
// events, without gaps or duplicates. A comment line every `events.heartbeat_seconds` keeps proxies from
// closing the stream. The caller's access is re-read while the stream lasts — at each heartbeat, at once when a
// notification names its session, user or key (sign-out, account or key changed, on any replica), and at the
// expiry of its token or key — so only events about paths the caller may read *now* are sent, and the stream
// ends (after an `access-ended` event saying why) once its credential has ended or lost `downloads`.
import { createStreamLimits, type AccountChange } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { Gauge } from 'prom-client';
import type { Authenticator } from '../auth/authenticate.ts';
import { mayRead, requirePermission, type Principal } from '../auth/principal.ts';
import type { EventBus } from './event-bus.ts';
import type { ShareEvent } from './event-types.ts';

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

/** setTimeout's limit; later expiries are caught by the heartbeat's re-check. */
const MAX_TIMER_MS = 2_147_483_647;

const concerns = (principal: Principal, change: AccountChange) =>
  change.kind === 'resync' ||
  (change.kind === 'revoked' && principal.session?.jti === change.jti) ||
  (change.kind === 'user' && principal.user?.id === change.id) ||
  (change.kind === 'key' && principal.key?.id === change.id);

/** A client that can't keep up is disconnected (it resumes with Last-Event-ID) rather than buffered forever. */
const maxQueuedEvents = 10_000;
const maxBufferedBytes = 8 * 1024 * 1024;

/** Whose slot a stream takes: its user, else its key, else (anonymous reads) its address. */
const holderOf = (principal: Principal, address: string) =>
  principal.user ? `user:${principal.user.id}` : principal.key ? `key:${principal.key.id}` : `address:${address}`;

const frame = (event: ShareEvent) => `id: ${event.id}\nevent: ${event.name}\ndata: ${JSON.stringify(event.data)}\n\n`;

export async function eventRoutes(app: FastifyInstance, options: EventRoutesOptions): Promise<void> {
  const limits = createStreamLimits({ what: 'event streams', perHolder: options.maxStreamsPerUser, total: options.maxStreams });
  const subscribers = new Gauge({ name: 'boxyard_sse_subscribers', help: 'Clients connected to GET /events on this replica.', registers: [app.metrics] });
  app.get(
    '/events',
    {
      schema: {
        summary: 'Live events (text/event-stream)',
        description:
          'Events: `checksum-update` {filePath, checksum, size, mtime}, `file-deleted` {filePath, isDirectory}, ' +
          '`folder-created` {folderPath}, `file-renamed` {oldPath, newPath, isDirectory}; `resync` {reason} when a ' +
          'resume point is older than the retention; `access-ended` {reason} just before the stream ends because the ' +
          "caller's credential ended (signed out, expired, key deleted, account disabled) or lost the downloads " +
          'permission (reconnecting then gets 401/403). Send `Last-Event-ID` (or `?lastEventId=`) to resume.',
        tags: ['events'],
        querystring: { type: 'object', properties: { lastEventId: { type: 'string', pattern: '^[0-9]{1,18}$' } } },
      },
    },
    async (request, reply) => {
      let principal = request.principal;
      requirePermission(principal, 'downloads', principal.scope);
      // HEAD answers what a GET would, then ends: node sends a HEAD response's headers only when it ends, so a
      // stream would keep the client waiting with no answer and a subscription open here.
      if (request.method === 'HEAD') return reply.status(200).headers({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' }).send();
      const lastEventHeader = request.headers['last-event-id'];
      const header = Array.isArray(lastEventHeader) ? lastEventHeader[0] : lastEventHeader;
      const resumeFrom = header !== undefined && /^\d{1,18}$/.test(header.trim()) ? Number(header.trim()) : (request.query as { lastEventId?: string }).lastEventId;
      const lastId = resumeFrom === undefined ? undefined : Number(resumeFrom);

      // Before anything is written: over a cap the answer is still a plain 429/503 in the envelope.
      const release = limits.claim(holderOf(principal, request.ip));
      reply.hijack();
      const raw = reply.raw;
      raw.once('close', release);
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

      subscribers.inc();
      const close = () => {
        if (closed) return;
        closed = true;
        release();
        subscribers.dec();
        unsubscribe();
        stopWatching();
        clearInterval(heartbeat);
        clearTimeout(expiry);
        raw.end();
      };

      const endAccess = (reason: string) => {
        if (closed) return;
        raw.write(`event: access-ended\ndata: ${JSON.stringify({ reason })}\n\n`);
        close();
      };

      /** Re-reads the caller's access; ends the stream when it has ended. True while the stream goes on. */
      let rechecking: Promise<boolean> | undefined;
      const recheck = (): Promise<boolean> =>
        (rechecking ??= options.authenticator
          .refresh(principal)
          .then(
            (current) => {
              if (closed) return false;
              if (!current) {
                endAccess('the credential of this stream has ended (signed out, expired, key deleted or account disabled)');
                return false;
              }
              principal = current;
              if (!principal.permissions.has('downloads')) {
                endAccess('the downloads permission was withdrawn');
                return false;
              }
              return true;
            },
            // PostgreSQL away: keep what we had, try again at the next heartbeat.
            () => !closed,
          )
          .finally(() => (rechecking = undefined)));

      const expiresAt = principal.key?.expiresAt ?? principal.session?.expiresAt;
      const untilExpiry = expiresAt ? expiresAt.getTime() - Date.now() : undefined;
      const expiry = untilExpiry !== undefined && untilExpiry < MAX_TIMER_MS ? setTimeout(() => void recheck(), Math.max(0, untilExpiry) + 50) : undefined;
      expiry?.unref();
      const stopWatching = options.changes?.subscribe((change) => {
        if (concerns(principal, change)) void recheck();
      }) ?? (() => {});

      const deliver = (event: ShareEvent) => {
        if (closed || event.id <= sentUpTo) return;
        sentUpTo = event.id;
        if (!event.paths.some((path) => mayRead(principal, path))) return;
        if (raw.writableLength > maxBufferedBytes) return close();
        raw.write(frame(event));
      };

      // `close` runs only from the callbacks below, so both constants exist by then.
      const heartbeat = setInterval(() => {
        void recheck().then((going) => {
          if (going) raw.write(`: heartbeat ${new Date().toISOString()}\n\n`);
        });
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
