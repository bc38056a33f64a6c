// One open GET /events stream: what it has sent, the caller's access as last re-read, and the timers and
// subscriptions that end with it. The route (routes.ts) opens it; the functions here run it.
import type { ServerResponse } from 'node:http';
import type { AccountChange } from '@boxyard/kit';
import type { FastifyBaseLogger } from 'fastify';
import type { Gauge } from '@prometheus-io/client';
import { mayRead, type Principal } from '../auth/principal.ts';
import type { EventRoutesOptions } from './routes.ts';
import type { ShareEvent } from './event-types.ts';

/** setTimeout's limit; later expiries are caught by the heartbeat's re-check. */
const MAX_TIMER_MS = 2_147_483_647;

/** A client that can't keep up is disconnected (it resumes with Last-Event-ID) rather than buffered forever. */
const maxQueuedEvents = 10_000;
const maxBufferedBytes = 8 * 1024 * 1024;

const concerns = (principal: Principal, change: AccountChange) =>
  change.kind === 'resync' ||
  (change.kind === 'revoked' && principal.session?.jti === change.jti) ||
  (change.kind === 'user' && principal.user?.id === change.id) ||
  (change.kind === 'key' && principal.key?.id === change.id);

const frame = (event: ShareEvent) => `id: ${event.id}\nevent: ${event.name}\ndata: ${JSON.stringify(event.data)}\n\n`;

export interface EventStream {
  readonly raw: ServerResponse;
  readonly options: EventRoutesOptions;
  readonly subscribers: Gauge;
  /** Gives back the stream's slot (createStreamLimits); safe to call more than once. */
  readonly release: () => void;
  principal: Principal;
  sentUpTo: number;
  /** While the missed events are read from the table, live ones wait in `pending`. */
  replaying: boolean;
  readonly pending: ShareEvent[];
  closed: boolean;
  rechecking: Promise<boolean> | undefined;
  unsubscribe: () => void;
  stopWatching: () => void;
  heartbeat: NodeJS.Timeout | undefined;
  expiry: NodeJS.Timeout | undefined;
}

export function createEventStream(
  raw: ServerResponse,
  principal: Principal,
  lastId: number | undefined,
  context: { options: EventRoutesOptions; subscribers: Gauge; release: () => void },
): EventStream {
  return {
    ...context,
    raw,
    principal,
    sentUpTo: lastId ?? 0,
    replaying: lastId !== undefined,
    pending: [],
    closed: false,
    rechecking: undefined,
    unsubscribe: () => {},
    stopWatching: () => {},
    heartbeat: undefined,
    expiry: undefined,
  };
}

export function closeStream(stream: EventStream): void {
  if (stream.closed) return;
  stream.closed = true;
  stream.release();
  stream.subscribers.dec();
  stream.unsubscribe();
  stream.stopWatching();
  clearInterval(stream.heartbeat);
  clearTimeout(stream.expiry);
  stream.raw.end();
}

function endAccess(stream: EventStream, reason: string): void {
  if (stream.closed) return;
  stream.raw.write(`event: access-ended\ndata: ${JSON.stringify({ reason })}\n\n`);
  closeStream(stream);
}

/** Re-reads the caller's access; ends the stream when it has ended. True while the stream goes on. */
function recheck(stream: EventStream): Promise<boolean> {
  return (stream.rechecking ??= stream.options.authenticator
    .refresh(stream.principal)
    .then(
      (current) => {
        if (stream.closed) return false;
        if (!current) {
          endAccess(stream, 'the credential of this stream has ended (signed out, expired, key deleted or account disabled)');
          return false;
        }
        stream.principal = current;
        if (!stream.principal.permissions.has('downloads')) {
          endAccess(stream, 'the downloads permission was withdrawn');
          return false;
        }
        return true;
      },
      // PostgreSQL away: keep what we had, try again at the next heartbeat.
      () => !stream.closed,
    )
    .finally(() => (stream.rechecking = undefined)));
}

/** Re-checks access at the credential's expiry and whenever a change names its session, user or key. */
export function watchAccess(stream: EventStream): void {
  const expiresAt = stream.principal.key?.expiresAt ?? stream.principal.session?.expiresAt;
  const untilExpiry = expiresAt ? expiresAt.getTime() - Date.now() : undefined;
  stream.expiry = untilExpiry !== undefined && untilExpiry < MAX_TIMER_MS ? setTimeout(() => void recheck(stream), Math.max(0, untilExpiry) + 50) : undefined;
  stream.expiry?.unref();
  stream.stopWatching =
    stream.options.changes?.subscribe((change) => {
      if (concerns(stream.principal, change)) void recheck(stream);
    }) ?? (() => {});
}

function deliver(stream: EventStream, event: ShareEvent): void {
  if (stream.closed || event.id <= stream.sentUpTo) return;
  stream.sentUpTo = event.id;
  if (!event.paths.some((path) => mayRead(stream.principal, path))) return;
  if (stream.raw.writableLength > maxBufferedBytes) return closeStream(stream);
  stream.raw.write(frame(event));
}

/** The heartbeat (after a re-check of access) and the live events; both stop when the stream closes. */
export function startLive(stream: EventStream): void {
  stream.heartbeat = setInterval(() => {
    void recheck(stream).then((going) => {
      if (going) stream.raw.write(`: heartbeat ${new Date().toISOString()}\n\n`);
    });
  }, stream.options.heartbeatSeconds * 1000);
  stream.heartbeat.unref();
  // Subscribed before the replay reads the table: whatever commits meanwhile is queued, then de-duplicated by id.
  stream.unsubscribe = stream.options.bus.subscribe((event) => {
    if (!stream.replaying) return deliver(stream, event);
    stream.pending.push(event);
    if (stream.pending.length > maxQueuedEvents) closeStream(stream);
  });
}

/** Sends what the client missed since its Last-Event-ID, then what was queued meanwhile. */
export async function replayMissed(stream: EventStream, log: FastifyBaseLogger): Promise<void> {
  const { raw, options } = stream;
  try {
    let page = await options.bus.replay(stream.sentUpTo);
    if (!page.complete) {
      raw.write(`event: resync\ndata: ${JSON.stringify({ reason: 'the resume point is no longer (or not) in the event history; list the share again' })}\n\n`);
      if (stream.sentUpTo > page.latestId) stream.sentUpTo = page.latestId; // an id from elsewhere: go on from now
    }
    while (page.events.length > 0 && !stream.closed) {
      for (const event of page.events) deliver(stream, event);
      page = await options.bus.replay(stream.sentUpTo);
    }
  } catch (error) {
    log.warn({ err: error }, 'event replay failed');
    closeStream(stream);
    return;
  }
  stream.replaying = false;
  for (const event of stream.pending.splice(0)) deliver(stream, event);
}
