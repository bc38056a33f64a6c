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

export function partAwareValidator(): BuildValidator {
  const pool = AjvCompiler();
  const build = (externalSchemas: Record<string, unknown>, options?: { customOptions?: Record<string, unknown> }) => {
    const customOptions = { ...AJV_OPTIONS, ...options?.customOptions };
    const coercing = pool(externalSchemas as never, { ...options, customOptions }) as unknown as CompileRoutePart;
    const exact = pool(externalSchemas as never, { ...options, customOptions: { ...customOptions, coerceTypes: false } }) as unknown as CompileRoutePart;
    const compile: CompileRoutePart = (route) => (route.httpPart === 'body' ? exact : coercing)(route);
    return compile;
  };
  return build as unknown as BuildValidator;
}
