// How a service stops without dropping a request (a rolling update, Ctrl-C, systemd's stop):
//   1. drain begins: /health/ready answers 503 at once, every response says `Connection: close` (keep-alive
//      clients open their next connection elsewhere), and `app.draining` (an AbortSignal) fires for long-lived
//      streams that hold no request open on purpose;
//   2. for `delay_seconds` the listener keeps accepting and serving (load balancers that have not yet seen the
//      readiness change still send requests here; in Kubernetes the preStop wait the operator renders covers this);
//   3. the listener stops; idle keep-alive connections close; SSE streams end with a retry hint and WebSocket
//      clients hear 1001 (in the services' preClose hooks), so they reconnect to another replica;
//   4. in-flight requests (a box download, an upload) get `grace_seconds` to finish; after that what is left is cut.
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

const drains = new WeakMap<FastifyInstance, AbortController>();

/** Decorates `app.draining` and marks every response of a draining service `Connection: close`. */
export function installGracefulStop(app: FastifyInstance): void {
  const drain = new AbortController();
  drains.set(app, drain);
  app.decorate('draining', drain.signal);
  app.addHook('onRequest', async (_request, reply) => {
    if (drain.signal.aborted) reply.header('connection', 'close');
  });
}

const IDLE_SWEEP_MS = 100;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * Runs the stop sequence above; `close` is the service's own teardown (it closes the app, whose close waits for
 * in-flight requests). The grace timer cuts the connections still open when it runs out, so `close` returns.
 */
export async function stopGracefully(app: FastifyInstance, times: ShutdownTimes, close: () => Promise<void>): Promise<void> {
  const drain = drains.get(app);
  if (!drain || drain.signal.aborted) return close();
  drain.abort();
  app.log.info({ delaySeconds: times.delay_seconds, graceSeconds: times.grace_seconds }, 'stopping: readiness off, finishing in-flight requests');
  if (times.delay_seconds > 0) await sleep(times.delay_seconds * 1000);
  const cut = setTimeout(() => {
    app.log.warn({ graceSeconds: times.grace_seconds }, 'grace period over: closing the connections still open');
    app.server.closeAllConnections();
  }, times.grace_seconds * 1000);
  cut.unref();
  // A response that began before the drain promised keep-alive: its connection turns idle only when it ends, and
  // node's close() closes the connections idle at the time of the call only (the rest would wait out keepAliveTimeout).
  const idle = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
  idle.unref();
  try {
    await close();
  } finally {
    clearTimeout(cut);
    clearInterval(idle);
  }
}
