// Renders every failure in the service's error shape; never a stack trace, never a 500 for a caller's mistake.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, kindOf, type FieldError } from './http-error.ts';
import { methodNotAllowed, type MethodTable } from './method-not-allowed.ts';
import { unavailableError } from './unavailable.ts';
import { toFieldErrors } from './validation.ts';

/** `problem`: RFC 9457 problem details (box repository). `envelope`: `{success:false, message, details}`. */
export type ErrorShape = 'problem' | 'envelope';

export interface ErrorHandlerOptions {
  shape: ErrorShape;
  /** Prefix of problem `type` URIs. */
  problemBase: string;
}

export interface ErrorHandlingOptions extends ErrorHandlerOptions {
  /** The app's routes: a path served with other methods answers 405 with `Allow` instead of 404. */
  routes?: MethodTable;
}

const titles: Record<string, string> = {
  validation: 'Validation failed',
  'bad-request': 'Bad request',
  authentication: 'Authentication required',
  forbidden: 'Forbidden',
  'not-found': 'Not found',
  'method-not-allowed': 'Method not allowed',
  conflict: 'Conflict',
  timeout: 'Request timeout',
  'payload-too-large': 'Payload too large',
  'unsupported-media-type': 'Unsupported media type',
  'range-not-satisfiable': 'Range not satisfiable',
  throttled: 'Too many requests',
  'insufficient-storage': 'Insufficient storage',
  unavailable: 'Service unavailable',
  internal: 'Internal server error',
};

/** Statuses whose message is ours or fastify's and safe to show, beyond the 4xx range. */
const exposedServerStatuses = new Set([503, 507]);

export function toHttpError(error: unknown, shape: ErrorShape): HttpError {
  if (error instanceof HttpError) return error;
  const unavailable = unavailableError(error);
  if (unavailable) return unavailable;
  const e = error as Partial<FastifyError> & { validation?: unknown[]; validationContext?: string };
  if (Array.isArray(e.validation)) {
    const errors = toFieldErrors(e.validation as never[], e.validationContext);
    // Problem details: a rule failing is 422 (seed 1); envelope services answer 400 "invalid parameters".
    return new HttpError(shape === 'problem' ? 422 : 400, 'Request validation failed', { errors });
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if ((status >= 400 && status < 500) || exposedServerStatuses.has(status)) {
    return new HttpError(status, e.message || titles[kindOf(status)] || 'Error');
  }
  return new HttpError(500, 'Internal server error');
}

export function renderError(error: HttpError, options: ErrorHandlerOptions, instance?: string): { type: string; body: unknown } {
  if (options.shape === 'problem') {
    return {
      type: 'application/problem+json; charset=utf-8',
      body: {
        type: `${options.problemBase}/${error.kind}`,
        title: titles[error.kind] ?? 'Error',
        status: error.statusCode,
        detail: error.message,
        ...(instance ? { instance } : {}),
        errors: error.errors,
      },
    };
  }
  return {
    type: 'application/json; charset=utf-8',
    body: { success: false, message: error.message, details: envelopeDetails(error.errors) || titles[error.kind] || '' },
  };
}

/**
 * Bugs are errors; a dependency away (503, 507) is a warning with its cause; a caller's mistake, and a 503 that
 * throttles on purpose (a replica's cap on open streams reached), is info.
 */
export function logFailure(request: FastifyRequest, error: unknown, httpError: HttpError): void {
  if (httpError.statusCode >= 500 && !exposedServerStatuses.has(httpError.statusCode)) request.log.error({ err: error }, 'unhandled error');
  else if (httpError.statusCode >= 500 && httpError.kind !== 'throttled')
    request.log.warn({ status: httpError.statusCode, err: error }, 'dependency unavailable');
  else request.log.info({ status: httpError.statusCode, reason: httpError.message }, 'request refused');
}

const envelopeDetails = (errors: FieldError[]) => errors.map((e) => `${e.pointer}: ${e.detail}`).join('; ');

export function installErrorHandling(app: FastifyInstance, options: ErrorHandlingOptions): void {
  const send = (error: HttpError, request: FastifyRequest, reply: FastifyReply) => {
    const { type, body } = renderError(error, options, request.url.split('?')[0]);
    for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
    return reply.status(error.statusCode).type(type).send(body);
  };
  app.setErrorHandler((error, request, reply) => {
    const httpError = toHttpError(error, options.shape);
    logFailure(request, error, httpError);
    return send(httpError, request, reply);
  });
  const routes = options.routes;
  if (routes) {
    // Before the body is read: fastify would otherwise refuse a body-carrying method's missing Content-Type first.
    app.addHook('onRequest', async (request) => {
      if (!request.is404) return;
      const path = request.url.split('?')[0]!;
      const allowed = routes.allowed(path);
      // A route that exists for this very method and called notFound() means the resource, not the path.
      if (allowed.length > 0 && !allowed.includes(request.method)) {
        throw methodNotAllowed(request.method, path, allowed);
      }
    });
  }
  app.setNotFoundHandler((request, reply) => send(new HttpError(404, `No route for ${request.method} ${request.url.split('?')[0]}`), request, reply));
}
