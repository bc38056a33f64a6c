// Control characters are refused at the edge, once for every route, before a handler or SQL sees them:
// PostgreSQL text cannot hold NUL (SQLSTATE 22021 was a 500 on many routes), and the other C0 controls have no
// place in names, ids or search terms (terminal escapes in logs and pages). Tab, line feed and carriage return
// stay allowed, as JSON text allows them in free text (descriptions, messages). Checked: every string and
// member name of a parsed JSON or form body, every query value and every path parameter. Raw bodies (uploads,
// octet streams) are bytes and not looked at.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ErrorShape } from './error-handler.ts';
import { HttpError, type FieldError } from './http-error.ts';

// One character class: linear, no backtracking.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const DETAIL = 'control characters (U+0000 to U+001F except tab, line feed and carriage return, and U+007F) are not allowed';
/** Enough to show where; a body full of them is not listed entry by entry. */
const MAX_REPORTED = 10;

export const hasControlCharacter = (text: string): boolean => CONTROL_CHARACTER.test(text);

const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

const isPlainContainer = (value: unknown): value is Record<string, unknown> | unknown[] => {
  if (Array.isArray(value)) return true;
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
};

/** The pointers (under `base`) of strings and member names in `value` that hold a control character. */
export function controlCharacterPointers(value: unknown, base: string): string[] {
  const found: string[] = [];
  // Iterative: a deeply nested body must not exhaust the stack.
  const stack: [unknown, string][] = [[value, base]];
  while (stack.length > 0 && found.length < MAX_REPORTED) {
    const [current, pointer] = stack.pop()!;
    if (typeof current === 'string') {
      if (hasControlCharacter(current)) found.push(pointer || '/');
      continue;
    }
    if (!isPlainContainer(current)) continue;
    const entries = Array.isArray(current) ? current.map((item, index) => [String(index), item] as const) : Object.entries(current);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i]!;
      const child = `${pointer}/${escapePointer(key)}`;
      if (!Array.isArray(current) && hasControlCharacter(key)) found.push(child);
      else stack.push([item, child]);
    }
  }
  return found.slice(0, MAX_REPORTED);
}

function controlCharacterErrors(request: FastifyRequest): FieldError[] {
  // fastify's query and params objects have a prototype of their own: their own members are what counts.
  const pointers = [
    ...controlCharacterPointers({ ...(request.params as object) }, '/params'),
    ...controlCharacterPointers({ ...(request.query as object) }, '/query'),
    ...controlCharacterPointers(request.body, ''),
  ];
  return pointers.slice(0, MAX_REPORTED).map((pointer) => ({ pointer, rule: 'control-characters', params: {}, detail: DETAIL }));
}

/**
 * Installs the check on every route of `app` (call it before routes are added). Failing values answer as a failing
 * validation rule does: 422 in problem details, 400 in the envelope.
 */
export function refuseControlCharacters(app: FastifyInstance, shape: ErrorShape): void {
  app.addHook('preValidation', async (request) => {
    const errors = controlCharacterErrors(request);
    if (errors.length > 0) throw new HttpError(shape === 'problem' ? 422 : 400, 'Request validation failed', { errors });
  });
}
