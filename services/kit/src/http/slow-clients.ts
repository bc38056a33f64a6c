// Cuts slow and abandoned clients by their progress, never by a total time (a multi-GiB upload may take an hour):
// - the header block within `headers_seconds` (node's headersTimeout, checked every quarter of it);
// - a request body must deliver `body_min_bytes` in every `body_window_seconds`; a window in which the service
//   itself holds the body back (its reader paused, bytes unread) does not count against the client;
// - no byte moved for `idle_seconds` while the service waits on the client — for more of the request, for it to
//   read what was sent, or for its next request — closes the connection. While the service prepares an answer or
//   streams one slowly (an event stream between heartbeats) the connection is left alone.
// Upgraded connections (WebSockets) leave node's HTTP handling and are the upgrade handler's to watch.
import { STATUS_CODES, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ServerTimeouts } from '../config/common.ts';
import { renderError, type ErrorHandlerOptions } from './error-handler.ts';
import { HttpError } from './http-error.ts';

export const DEFAULT_TIMEOUTS: ServerTimeouts = { headers_seconds: 30, body_window_seconds: 30, body_min_bytes: 8192, idle_seconds: 120 };

interface InFlight {
  request: IncomingMessage;
  response: ServerResponse;
}

interface BodyWatch {
  request: IncomingMessage;
  socket: Socket;
  windowStart: number;
  bytesAtWindowStart: number;
  log: FastifyBaseLogger;
}

export interface SlowClientGuard {
  /** Applies the header and idle rules to a listener of the app (its own, or a second one). Before it listens. */
  attach(server: HttpServer | HttpsServer): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    slowClients: SlowClientGuard;
  }
}

/** The service is the one holding the request back: bytes it has not read yet, or its reader paused the socket. */
const heldByService = (request: IncomingMessage, socket: Socket) => request.readableLength > 0 || socket.isPaused();

const hasBody = (request: IncomingMessage) =>
  request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');

/**
 * What node answers before a request reaches the app (headers too slow or too large, malformed HTTP), in the
 * service's error shape rather than node's or fastify's bare text; then the connection closes.
 */
export function clientErrorAnswer(shape: ErrorHandlerOptions) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const message = status === 408 ? 'the request headers took too long' : status === 431 ? 'the request headers are too large' : 'malformed HTTP request';
    const { type, body } = renderError(new HttpError(status, message), shape);
    const text = JSON.stringify(body);
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
    }
    socket.destroy();
  };
}

export function guardSlowClients(app: FastifyInstance, timeouts: ServerTimeouts, clientError: ReturnType<typeof clientErrorAnswer>): SlowClientGuard {
  const inFlight = new WeakMap<Socket, InFlight>();
  const bodies = new Set<BodyWatch>();
  const windowMs = timeouts.body_window_seconds * 1000;

  app.addHook('onRequest', async (request, reply) => {
    const socket = request.raw.socket;
    // Only connections of a listener (app.inject's requests have a stand-in socket and no network to guard).
    if (!(socket instanceof Socket)) return;
    const current = { request: request.raw, response: reply.raw };
    inFlight.set(socket, current);
    reply.raw.once('close', () => {
      if (inFlight.get(socket) === current) inFlight.delete(socket);
    });
    if (hasBody(request.raw) && !request.raw.complete) {
      bodies.add({ request: request.raw, socket, windowStart: Date.now(), bytesAtWindowStart: socket.bytesRead, log: request.log });
    }
  });

  const checkBodies = () => {
    const now = Date.now();
    for (const watch of bodies) {
      const { request, socket } = watch;
      if (request.complete || socket.destroyed) {
        bodies.delete(watch);
        continue;
      }
      if (heldByService(request, socket)) {
        watch.windowStart = now;
        watch.bytesAtWindowStart = socket.bytesRead;
        continue;
      }
      if (now - watch.windowStart < windowMs) continue;
      const received = socket.bytesRead - watch.bytesAtWindowStart;
      if (received >= timeouts.body_min_bytes) {
        watch.windowStart = now;
        watch.bytesAtWindowStart = socket.bytesRead;
        continue;
      }
      bodies.delete(watch);
      watch.log.info({ received, windowSeconds: timeouts.body_window_seconds, minBytes: timeouts.body_min_bytes }, 'request body too slow: connection closed');
      // Whoever reads the body sees it fail (an upload is discarded as if the client had gone); the socket closes.
      request.destroy(new HttpError(408, `the request body sent fewer than ${timeouts.body_min_bytes} bytes in ${timeouts.body_window_seconds} s`));
    }
  };
  const ticker = setInterval(checkBodies, Math.min(1000, Math.max(50, windowMs / 4)));
  ticker.unref();
  app.addHook('onClose', async () => clearInterval(ticker));

  const onIdle = (socket: Socket) => {
    const current = inFlight.get(socket);
    const waitingOnClient =
      !current || (!current.request.complete && !heldByService(current.request, socket)) || (current.response.headersSent && socket.writableLength > 0);
    if (waitingOnClient) socket.destroy();
  };

  return {
    attach(server) {
      server.headersTimeout = timeouts.headers_seconds * 1000;
      // A total time for the whole request would cut long uploads; the body rule above replaces it.
      server.requestTimeout = 0;
      // node checks header deadlines on this interval (default 30 s): a quarter of the limit keeps it close.
      (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = Math.min(30_000, Math.max(100, (timeouts.headers_seconds * 1000) / 4));
      server.timeout = timeouts.idle_seconds * 1000;
      // Between requests node uses the keep-alive time (fastify's 72 s) instead: never longer than the idle rule.
      server.keepAliveTimeout = Math.min(server.keepAliveTimeout || Infinity, server.timeout);
      // With a listener node leaves the decision to us (its default destroys every idle socket, busy or not).
      server.on('timeout', onIdle);
      // fastify answers these on its own listener (clientErrorHandler); a second listener gets the same.
      if (server.listenerCount('clientError') === 0) server.on('clientError', clientError);
    },
  };
}
