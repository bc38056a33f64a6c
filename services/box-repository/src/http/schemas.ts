// JSON-schema pieces shared by the routes.
export const SLUG_PATTERN = '^[A-Za-z0-9_-]{1,100}$';
export const SLUG_DETAIL = 'letters, digits, "-" and "_" only, 1 to 100 characters';
export { VERSION_DETAIL, VERSION_PATTERN } from '../versions/rubygems-version.ts';

/** Organization names that would shadow the service's own top-level paths in `/{org}/{box}` (and the console's). */
export const RESERVED_ORGANIZATION_NAMES = ['api', 'api-docs', 'health', 'metrics', 'openapi.json', 'console'];

export const slug = { type: 'string', pattern: SLUG_PATTERN } as const;
export const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
export const email = { type: 'string', format: 'email', maxLength: 254 } as const;

export const params = (...names: string[]) =>
  ({ type: 'object', properties: Object.fromEntries(names.map((n) => [n, { type: 'string' }])), required: names }) as const;

/**
 * Error statuses a route's own rules answer, for the OpenAPI description. The kit gives each its problem-details
 * body and media type, and adds the statuses every route can answer (400, 404 on a path with parameters, 413,
 * 415, 422, 429, 503).
 */
export function errors(...statuses: number[]): Record<number, Record<string, never>> {
  return Object.fromEntries(statuses.map((s) => [s, {}]));
}

export const body = (properties: Record<string, unknown>, required: string[] = []) =>
  ({ type: 'object', properties, required, additionalProperties: false }) as const;

/** PUT and PATCH both take partial updates of the listed members (PUT is kept for the seed's clients). */
export const updateBody = (properties: Record<string, unknown>) => ({ ...body(properties), minProperties: 1 }) as const;

export const ORG_PREFIX = '/api/organization/:org';
export const BOX_PREFIX = `${ORG_PREFIX}/box/:box`;
export const VERSION_PREFIX = `${BOX_PREFIX}/version/:version`;
export const PROVIDER_PREFIX = `${VERSION_PREFIX}/provider/:provider`;
export const ARCH_PREFIX = `${PROVIDER_PREFIX}/architecture/:arch`;
