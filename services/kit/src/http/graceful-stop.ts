// How a service stops without dropping a request (a rolling update, Ctrl-C, systemd's stop):
//   1. drain begins: /health/ready answers 503 at once, every response says `Connection: close` (keep-alive
//      clients open their next connection elsewhere), and `app.draining` (an AbortSignal) fires for long-lived
//      streams that hold no request open on purpose;
//   2. for `delay_seconds` the listener keeps accepting and serving (load balancers that have not yet seen the
//      readiness change still send requests here; in Kubernetes the preStop wait the operator renders covers this);
//   3. the listener stops; idle keep-alive connections close; SSE streams end with a retry hint and WebSocket
//      clients hear 1001 (in the services' preClose hooks), so they reconnect to another replica;
//   4. in-flight requests (a box download, an upload) get `grace_seconds` to finish; after that what is left is cut.
import type { Server as HttpServer } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** Fires when the service begins to stop (before its listener closes): long-lived streams end politely. */
    draining: AbortSignal;
  }
}

export interface ShutdownTimes {
  delay_seconds: number;
  grace_seconds: number;
}

interface Drain {
  controller: AbortController;
  /** The listener's HTTP connections (upgraded ones leave: WebSockets are their handler's to end). */
  sockets: Set<Socket>;
}

const drains = new WeakMap<FastifyInstance, Drain>();

/**
 * node's http `close()` first runs closeIdleConnections(), which takes a response for done once `end()` was
 * called and destroys its socket with the bytes still buffered for a slow reader: the end of a box download is
 * lost. Stop listening the way net does instead; keep-alive connections are closed below once really idle.
 */
function closeWithoutCuttingResponses(server: HttpServer): void {
  server.close = function close(this: HttpServer, callback?: (error?: Error) => void) {
    NetServer.prototype.close.call(this, (error?: Error) => {
      // What http's close() would also have done: stop its (unref'd) timer of header deadlines.
      const checks = Object.getOwnPropertySymbols(this).find((symbol) => symbol.description === 'http.server.connectionsCheckingInterval');
      if (checks) clearInterval((this as unknown as Record<symbol, NodeJS.Timeout>)[checks]);
      callback?.(error);
    });
    return this;
  };
}

/** Decorates `app.draining` and marks every response of a draining service `Connection: close`. */
export function installGracefulStop(app: FastifyInstance): void {
  const drain: Drain = { controller: new AbortController(), sockets: new Set() };
  drains.set(app, drain);
  app.decorate('draining', drain.controller.signal);
  app.addHook('onRequest', async (_request, reply) => {
    if (drain.controller.signal.aborted) reply.header('connection', 'close');
  });
  app.server.on('connection', (socket: Socket) => {
    drain.sockets.add(socket);
    socket.once('close', () => drain.sockets.delete(socket));
  });
  app.server.on('upgrade', (_request, socket: Socket) => drain.sockets.delete(socket));
  closeWithoutCuttingResponses(app.server);
}

/** Keep-alive time of a stopping service: a connection whose last response is out closes this soon after. */
const DRAINING_KEEP_ALIVE_MS = 100;

/** Connections between requests: no response in progress (node detaches one only after it is handed to the OS). */
const betweenRequests = (socket: Socket) => !(socket as Socket & { _httpMessage?: unknown })._httpMessage;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * Runs the stop sequence above; `close` is the service's own teardown (it closes the app, whose close waits for
 * in-flight requests). The grace timer cuts the connections still open when it runs out, so `close` returns.
 */
export async function stopGracefully(app: FastifyInstance, times: ShutdownTimes, close: () => Promise<void>): Promise<void> {
  const drain = drains.get(app);
  if (!drain || drain.controller.signal.aborted) return close();
  drain.controller.abort();
  app.log.info({ delaySeconds: times.delay_seconds, graceSeconds: times.grace_seconds }, 'stopping: readiness off, finishing in-flight requests');
  if (times.delay_seconds > 0) await sleep(times.delay_seconds * 1000);
  const cut = setTimeout(() => {
    app.log.warn({ graceSeconds: times.grace_seconds }, 'grace period over: closing the connections still open');
    app.server.closeAllConnections();
  }, times.grace_seconds * 1000);
  cut.unref();
  // Keep-alive connections close once idle: responses finishing from now on get a short keep-alive time, and the
  // ones idle already the same (the slow-client guard's idle rule then closes them; a request arriving meanwhile
  // is served).
  app.server.keepAliveTimeout = DRAINING_KEEP_ALIVE_MS;
  for (const socket of drain.sockets) if (betweenRequests(socket)) socket.setTimeout(DRAINING_KEEP_ALIVE_MS);
  try {
    await close();
  } finally {
    clearTimeout(cut);
  }
}
