// Turns fastify/ajv validation failures into FieldErrors: one per failing value, with a JSON pointer.
import type { FieldError } from './http-error.ts';

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Pointers into the body are plain (`/name`); other parts are prefixed (`/query/limit`, `/params/org`). */
export function toFieldErrors(errors: readonly AjvError[], context: string | undefined): FieldError[] {
  const base = !context || context === 'body' ? '' : `/${context === 'querystring' ? 'query' : context}`;
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of errors) {
    let path = error.instancePath;
    if (error.keyword === 'required') path += `/${escape(String(error.params.missingProperty))}`;
    if (error.keyword === 'additionalProperties') path += `/${escape(String(error.params.additionalProperty))}`;
    const pointer = base + path || '/';
    // anyOf/oneOf report every branch; keep the first failure per pointer and rule.
    const id = `${pointer}\u0000${error.keyword}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ pointer, rule: error.keyword, params: error.params, detail: describe(error) });
  }
  return out;
}

const escape = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

function describe(error: AjvError): string {
  if (error.keyword === 'additionalProperties') return `is not an allowed property`;
  return error.message ?? error.keyword;
}
