// One access-log line per request at `info`, when the answer has been written: fastify's own pair ("incoming
// request" before any hook, "request completed" after) doubled the log for nothing an operator needs twice
// (1.4 GB of stdout for ~3 million requests). The line carries what an operator filters on: method, url (with
// credentials in the query redacted), route (the pattern: `/:org/:box`), status, duration in ms, bytes, the caller
// when a service named one (setAccessPrincipal), the client's address; `reqId` (and, inside a trace, trace_id) come
// from the request's logger. Written where fastify wrote its "request completed" (its log controller, replaced
// here), so it costs no hook of its own; fastify's other request logs (stream errors, 404s) stay as they were. A
// request whose client goes away before its answer ends logs no line, as before.
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who made the request, as the access log names it (null: anonymous, or not known yet). */
    accessPrincipal: string | null;
    /** The connection's bytes written when the request arrived (a streamed answer's size is the difference). */
    accessBytesAtStart: number;
  }
}

/** Names the caller on the request's access-log line (a username, or how an outsider came in: `share-link`). */
export function setAccessPrincipal(request: FastifyRequest, principal: string | null): void {
  request.accessPrincipal = principal;
}

/** The access-log line's fields. */
export function accessLogFields(request: FastifyRequest, reply: FastifyReply, redact: (url: string) => string) {
  const declared = Number(reply.getHeader('content-length') ?? NaN);
  const written = request.raw.socket?.bytesWritten;
  // The body's length when declared, else what was written to the connection for this answer (a streamed body).
  const bytes = Number.isFinite(declared) ? declared : written !== undefined ? written - request.accessBytesAtStart : null;
  return {
    method: request.method,
    url: redact(request.url),
    route: request.routeOptions.url ?? null,
    status: reply.statusCode,
    duration_ms: Math.round(reply.elapsedTime * 100) / 100,
    bytes,
    principal: request.accessPrincipal,
    ip: request.ip,
  };
}

const LOGS_INFO = new Set(['info', 'debug', 'trace']);

/** fastify's request logging with the two lines per request replaced by one (fastify's option `logController`). */
export function accessLogController(redact: (url: string) => string): LogController {
  return new (class extends LogController {
    override incomingRequest(): void {}
    override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
      if (error) request.log.error({ ...accessLogFields(request, reply, redact), err: error }, 'request errored');
      // No fields built when the service logs at warn or above.
      else if (LOGS_INFO.has(request.log.level)) request.log.info(accessLogFields(request, reply, redact), 'request');
    }
  })();
}

/** The request fields the access log reads (who, and where the connection's byte count stood). */
export function installAccessLog(app: FastifyInstance): void {
  app.decorateRequest('accessPrincipal', null);
  app.decorateRequest('accessBytesAtStart', 0);
  app.addHook('onRequest', (request, _reply, done) => {
    request.accessBytesAtStart = request.raw.socket?.bytesWritten ?? 0;
    done();
  });
}
