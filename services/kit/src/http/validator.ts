// Request validation: query strings, path parameters and headers are text on the wire, so their values are
// coerced to the schema's types (`?page=2` is the integer 2); a JSON body already carries types, so a number
// where the schema says string is refused rather than silently turned into "1".
import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';

/** ajv options for every part: one error per failing value, no silent removal of unknown members, defaults. */
export const AJV_OPTIONS = { allErrors: true, removeAdditional: false, coerceTypes: 'array', useDefaults: true } as const;

type BuildValidator = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator'];
/** What fastify calls per route and part (the package's own types describe it as a bare schema). */
type CompileRoutePart = (route: { schema: unknown; method: string; url: string; httpPart?: string }) => unknown;

type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null };

export function partAwareValidator(): BuildValidator {
  const pool = AjvCompiler();
  const build = (externalSchemas: Record<string, unknown>, options?: { customOptions?: Record<string, unknown> }) => {
    const customOptions = { ...AJV_OPTIONS, ...options?.customOptions };
    const coercing = pool(externalSchemas as never, { ...options, customOptions }) as unknown as CompileRoutePart;
    const exact = pool(externalSchemas as never, { ...options, customOptions: { ...customOptions, coerceTypes: false } }) as unknown as CompileRoutePart;
    const compile: CompileRoutePart = (route) => finiteOnly((route.httpPart === 'body' ? exact : coercing)(route) as Validate);
    return compile;
  };
  return build as unknown as BuildValidator;
}

/**
 * `?page=1e400` and the JSON `1e400` both become Infinity, which ajv takes for an integer within any `maximum`
 * (and PostgreSQL then refuses): a number that is not finite fails validation like any other wrong type.
 */
function finiteOnly(validate: Validate): Validate {
  const wrapped: Validate = (data) => {
    const valid = validate(data);
    wrapped.errors = validate.errors ?? null;
    if (!valid) return false;
    const pointers = nonFinite(data, '', 0);
    if (pointers.length === 0) return true;
    wrapped.errors = pointers.map((instancePath) => ({ instancePath, keyword: 'type', params: { type: 'number' }, message: 'must be a finite number' }));
    return false;
  };
  return wrapped;
}

function nonFinite(value: unknown, path: string, depth: number): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [path || '/'];
  if (depth > 32 || value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => nonFinite(item, `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, depth + 1));
}
