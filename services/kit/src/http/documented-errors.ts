// Every error a route can answer is in the OpenAPI description, with the media type and body it really has.
// The statuses any route can produce are added centrally (a malformed request, input validation, a body too
// large or of a type the route does not read, a resource named in the path not found or too long, rate limiting, a
// dependency away); services add what their own rules answer (401, 403, 409...).
import type { FastifyInstance, HTTPMethods, RouteOptions } from 'fastify';
import type { ErrorShape } from './error-handler.ts';

export const problemSchema = {
  type: 'object',
  description: 'Problem details (RFC 9457)',
  properties: {
    type: { type: 'string', description: 'A URI naming the kind of problem' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string', description: 'The path of the request' },
    errors: {
      type: 'array',
      description: 'One entry per failing value',
      items: {
        type: 'object',
        properties: {
          pointer: { type: 'string', description: 'JSON pointer to the value (`/query/...`, `/params/...` outside the body)' },
          rule: { type: 'string' },
          params: { type: 'object', additionalProperties: true },
          detail: { type: 'string' },
        },
        required: ['pointer', 'rule', 'params', 'detail'],
      },
    },
  },
  required: ['type', 'title', 'status', 'detail', 'errors'],
} as const;

export const envelopeErrorSchema = {
  type: 'object',
  properties: { success: { type: 'boolean', const: false }, message: { type: 'string' }, details: { type: 'string' } },
  required: ['success', 'message', 'details'],
} as const;

export const errorMediaType = (shape: ErrorShape) => (shape === 'problem' ? 'application/problem+json' : 'application/json');

const descriptions: Record<number, string> = {
  400: 'Malformed request',
  401: 'Authentication required or credentials refused',
  403: 'Not allowed for this caller',
  404: 'Not found',
  408: 'The request body took too long',
  409: 'Conflict with the current state',
  413: 'Request body too large',
  414: 'A path parameter is too long',
  415: 'Unsupported request body type',
  416: 'Range not satisfiable',
  422: 'Validation failed',
  429: 'Too many requests',
  502: 'A server this request talks to (e.g. an SMTP server) failed or refused',
  503: 'A dependency (database, storage) is unavailable, or the service is shutting down',
  507: 'Storage full',
};

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The statuses any route of this kind can answer, whatever it does. */
function commonStatuses(route: RouteOptions, shape: ErrorShape): number[] {
  const statuses = [400, 503];
  // Input validation, and the edge's refusal of control characters, which any query string can carry.
  statuses.push(shape === 'problem' ? 422 : 400);
  if (([] as HTTPMethods[]).concat(route.method).some((m) => BODY_METHODS.has(m))) statuses.push(413, 415);
  // A path parameter longer than fastify's maxParamLength (100) is refused before routing.
  if (/[:*]/.test(route.url)) statuses.push(404, 414);
  if ((route.config as { rateLimit?: unknown } | undefined)?.rateLimit !== false) statuses.push(429);
  return statuses;
}

type ResponseSchema = Record<string, Record<string, unknown>>;

const errorResponse = (shape: ErrorShape, status: number, description?: unknown) => ({
  description: typeof description === 'string' ? description : (descriptions[status] ?? 'Error'),
  content: { [errorMediaType(shape)]: { schema: shape === 'problem' ? problemSchema : envelopeErrorSchema } },
});

/**
 * Documents `statuses` on every route of `scope` (registered after this call) that does not document them
 * already: what a whole scope answers, such as 401 and 403 behind its authentication.
 */
export function documentStatuses(scope: FastifyInstance, shape: ErrorShape, statuses: number[]): void {
  scope.addHook('onRoute', (route) => {
    const schema = route.schema as { hide?: boolean; response?: ResponseSchema } | undefined;
    if (!schema || schema.hide) return;
    const response: ResponseSchema = { ...(schema.response ?? { 200: { description: 'Default Response' } }) };
    for (const status of statuses) response[status] ??= errorResponse(shape, status);
    schema.response = response;
  });
}

/** Adds the common statuses to every documented route and gives each error its real media type and body. */
export function documentErrors(app: FastifyInstance, shape: ErrorShape): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as (RouteOptions['schema'] & { hide?: boolean; response?: ResponseSchema }) | undefined;
    // Undocumented routes (health, metrics, the description itself).
    if (!schema || schema.hide) return;
    // A route that documents no answer keeps the description's default one (any 200 body) beside its errors.
    const response: ResponseSchema = { ...(schema.response ?? { 200: { description: 'Default Response' } }) };
    for (const status of commonStatuses(route, shape)) response[status] ??= {};
    for (const [key, given] of Object.entries(response)) {
      const status = Number(key);
      if (!(status >= 400) || given.content) continue;
      response[key] = errorResponse(shape, status, given.description);
    }
    schema.response = response;
  });
}
