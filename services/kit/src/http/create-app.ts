// The fastify 5 app every service starts from: logs with request ids, the service's error shape, health and
// readiness, the metrics registry (served apart: metrics-listener.ts), OpenAPI + Swagger UI at /api-docs, and HTTPS when configured.
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Registry } from '@prometheus-io/client';
import { traceIdsOfActiveSpan } from '../telemetry/log-correlation.ts';
import type { ServerTimeouts, TrustProxy } from '../config/common.ts';
import { certificateExpiryMetric, createMetricsRegistry, installMetrics } from '../metrics/metrics.ts';
import { refuseControlCharacters } from './control-characters.ts';
import { documentErrors } from './documented-errors.ts';
import { installErrorHandling, renderError, toHttpError, type ErrorShape } from './error-handler.ts';
import { trackRoutes } from './method-not-allowed.ts';
import { clientErrorAnswer, DEFAULT_TIMEOUTS, guardSlowClients } from './slow-clients.ts';
import { partAwareValidator } from './validator.ts';
import { recordRouteTable } from './route-table.ts';
import { installGracefulStop } from './graceful-stop.ts';
import { terminalLogStream } from '../logging/log-format.ts';
import { accessLogController, installAccessLog } from './access-log.ts';

export type ReadinessCheck = () => Promise<void>;

export interface CreateAppOptions {
  service: string;
  version: string;
  errorShape: ErrorShape;
  problemBase?: string;
  logLevel?: string;
  /** Where logs go (default stdout); tests read them from here. */
  logStream?: NodeJS.WritableStream;
  /** PEM material: the app listens with HTTPS when given. */
  https?: { cert: string; key: string } | undefined;
  /** `server.trust_proxy`: which forwarded headers fastify believes (request.ip, .protocol, .host). */
  trustProxy?: TrustProxy;
  bodyLimit?: number;
  /** `server.timeouts`: how slow or idle a client may be before its connection is closed. */
  timeouts?: ServerTimeouts;
  /** The app's metrics registry, when the service made it first (to count into it from its pool and store). */
  metrics?: Registry;
  /** Named readiness checks (PostgreSQL, storage...) run by GET /health/ready. */
  readiness?: Record<string, ReadinessCheck>;
  openapi: {
    title: string;
    description?: string;
    /** OpenAPI version of the published description. */
    openapi?: '3.0.3' | '3.1.0';
    servers?: { url: string; description?: string }[];
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Registry;
  }
}

const READINESS_TIMEOUT_MS = 3000;

/** Query parameters that carry credentials (Vagrant's `?access_token=`, signed links): never logged. */
const SECRET_QUERY_PARAMS = /([?&](?:access_token|token|signature|sig|api_key|apikey|key)=)[^&#]*/gi;
export const redactUrl = (url: string) => url.replace(SECRET_QUERY_PARAMS, '$1[redacted]');

const streamOf = (stream: NodeJS.WritableStream | undefined) => (stream ? { stream } : {});

function serializeRequest(request: FastifyRequest) {
  return { method: request.method, url: redactUrl(request.url), host: request.host, remoteAddress: request.ip, remotePort: request.socket?.remotePort };
}

/**
 * fastify reads a hop count as "trust nobody" (it cannot tell a proxy from a client); we mean the n nearest hops,
 * as Express does: the peer and the n-1 entries it forwarded. Addresses and `false` go to fastify as they are.
 */
function trustProxyFunction(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

export async function createApp(options: CreateAppOptions): Promise<FastifyInstance> {
  const problemBase = options.problemBase ?? 'https://boxyard.io/problems';
  // Before routing (headers too slow or too large, malformed HTTP), on every listener: the service's shape, then close.
  const clientError = clientErrorAnswer({ shape: options.errorShape, problemBase });
  const serverOptions: FastifyServerOptions = {
    logger: {
      level: options.logLevel ?? 'info',
      redact: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-access-token"]', 'req.headers["x-api-key"]'],
      serializers: { req: serializeRequest },
      // Every line logged inside a trace names it, so logs and traces join on trace_id.
      mixin: traceIdsOfActiveSpan,
      ...streamOf(options.logStream ?? terminalLogStream(options.service)),
    },
    // One line per request instead of fastify's two (access-log.ts).
    logController: accessLogController(redactUrl),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    trustProxy: trustProxyFunction(options.trustProxy ?? false),
    bodyLimit: options.bodyLimit ?? 1_048_576,
    // Query, path and header values are coerced to their schema's types; JSON bodies are not (validator.ts).
    schemaController: { compilersFactory: { buildValidator: partAwareValidator() } },
    // Errors raised before routing (a malformed URL such as `/%zz`) are answered in the service's shape too.
    frameworkErrors: (error, _request, reply) => {
      const httpError = toHttpError(error, options.errorShape);
      const { type, body } = renderError(httpError, { shape: options.errorShape, problemBase });
      // fastify types this reply generically; it is a plain reply here.
      void (reply as unknown as FastifyReply).status(httpError.statusCode).type(type).send(body);
    },
    clientErrorHandler: clientError,
    // Stopping closes idle keep-alive connections only: in-flight requests finish (graceful-stop.ts), and requests
    // still arriving on open connections are served (with `Connection: close`), not refused.
    forceCloseConnections: 'idle',
    return503OnClosing: false,
  };
  // fastify's overloads type an HTTPS server apart; the app's API is the same either way.
  const app = (options.https
    ? Fastify({ ...serverOptions, https: { cert: options.https.cert, key: options.https.key } } as FastifyServerOptions)
    : Fastify(serverOptions)) as unknown as FastifyInstance;
  recordRouteTable(app);
  app.decorate('slowClients', guardSlowClients(app, options.timeouts ?? DEFAULT_TIMEOUTS, clientError));
  app.slowClients.attach(app.server);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installAccessLog(app);
  installGracefulStop(app);
  // Both watch every route added from here on.
  const routes = trackRoutes(app);
  app.decorate('methodTable', routes);
  documentErrors(app, options.errorShape);
  installErrorHandling(app, { shape: options.errorShape, problemBase, routes });
  refuseControlCharacters(app, options.errorShape);

  const registry = options.metrics ?? createMetricsRegistry({ service: options.service });
  app.decorate('metrics', registry);
  installMetrics(app, registry);
  if (options.https) certificateExpiryMetric(registry, options.https.cert);

  await app.register(swagger, {
    openapi: {
      openapi: options.openapi.openapi ?? '3.1.0',
      info: { title: options.openapi.title, version: options.version, ...(options.openapi.description ? { description: options.openapi.description } : {}) },
      ...(options.openapi.servers ? { servers: options.openapi.servers } : {}),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/api-docs' });
  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());

  app.get('/health', { schema: { hide: true }, config: { rateLimit: false, otel: false } }, async () => ({ status: 'ok' }));
  app.get('/health/ready', { schema: { hide: true }, config: { rateLimit: false, otel: false } }, async (_request, reply) => {
    // A stopping service leaves the load balancer's rotation at once, whatever its dependencies say.
    if (app.draining.aborted) return reply.status(503).send({ status: 'draining', checks: {} });
    const checks = Object.entries(options.readiness ?? {});
    const results = await Promise.all(
      checks.map(async ([name, check]) => {
        try {
          await Promise.race([
            check(),
            new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS).unref()),
          ]);
          return [name, 'ok'] as const;
        } catch (error) {
          app.log.warn({ check: name, err: error }, 'readiness check failed');
          return [name, 'failing'] as const;
        }
      }),
    );
    const ready = results.every(([, state]) => state === 'ok');
    reply.status(ready ? 200 : 503);
    return { status: ready ? 'ok' : 'unavailable', checks: Object.fromEntries(results) };
  });
  return app;
}
