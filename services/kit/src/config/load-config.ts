// One YAML file plus BOXYARD_<KEY PATH> environment overrides (`.` written as `__`), `*_file` keys read from
// files, all validated by a zod schema. A bad value stops start-up with a message naming the key and the rule.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface LoadConfigOptions {
  /** Path of the YAML file (`--config`); optional. */
  file?: string | undefined;
  env?: Record<string, string | undefined>;
  prefix?: string;
  /** Values applied under the file and the environment (e.g. `boxyard dev`'s embedded defaults). */
  defaults?: Record<string, unknown>;
  /** Values applied over the defaults and the file, under the environment (`boxyard serve all`'s per-service keys). */
  overrides?: Record<string, unknown>;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Mappings merge key by key; a section naming another `driver` (another variant of a union) replaces the base's. */
function deepMerge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    const otherVariant = isObject(value) && isObject(current) && 'driver' in value && value.driver !== current.driver;
    out[key] = isObject(value) && isObject(current) && !otherVariant ? deepMerge(current, value) : value;
  }
  return out;
}

/** Unwraps optional/default/nullable/pipe wrappers to the schema that describes the value itself. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  for (;;) {
    const def = (current as unknown as { _zod: { def: { type: string; innerType?: z.ZodType; in?: z.ZodType } } })._zod.def;
    if (def.innerType) current = def.innerType;
    else if (def.type === 'pipe' && def.in) current = def.in;
    else return current;
  }
}

function childSchema(schema: z.ZodType, key: string): z.ZodType | undefined {
  const inner = unwrap(schema);
  if (inner instanceof z.ZodObject) return (inner.shape as Record<string, z.ZodType>)[key];
  if (inner instanceof z.ZodDiscriminatedUnion || inner instanceof z.ZodUnion) {
    for (const option of inner.options as z.ZodType[]) {
      const found = childSchema(option, key);
      if (found) return found;
    }
  }
  return undefined;
}

/** The schema's own spelling of a lower-cased environment segment (`expiresin` -> `expiresIn`, as the seed names it). */
function keyNamed(schema: z.ZodType, segment: string): string {
  if (childSchema(schema, segment)) return segment;
  const inner = unwrap(schema);
  const objects =
    inner instanceof z.ZodObject
      ? [inner]
      : inner instanceof z.ZodDiscriminatedUnion || inner instanceof z.ZodUnion
        ? (inner.options as z.ZodType[]).map(unwrap)
        : [];
  for (const object of objects) {
    if (!(object instanceof z.ZodObject)) continue;
    const found = Object.keys(object.shape as object).find((key) => key.toLowerCase() === segment);
    if (found) return found;
  }
  return segment;
}

/** Environment strings become typed values: strings stay strings, anything else is parsed as YAML. */
function coerce(raw: string, schema: z.ZodType): unknown {
  const inner = unwrap(schema);
  if (inner instanceof z.ZodString || inner instanceof z.ZodEnum || inner instanceof z.ZodLiteral) return raw;
  try {
    return parseYaml(raw);
  } catch {
    return raw;
  }
}

function envOverrides(schema: z.ZodType, env: Record<string, string | undefined>, prefix: string): Json {
  const out: Json = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith(prefix) || raw === undefined) continue;
    const path = name.slice(prefix.length).toLowerCase().split('__');
    // Only names that match a key of the schema: the environment is shared with other tools (BOXYARD_CACHE...).
    let node: z.ZodType | undefined = schema;
    for (const [i, lowered] of path.entries()) {
      const last = i === path.length - 1;
      const segment: string = node ? keyNamed(node, lowered) : lowered;
      path[i] = segment;
      // `<key>_file` names a file holding <key>: kept as a string and read later.
      node = node && (childSchema(node, segment) ?? (last && segment.endsWith('_file') && childSchema(node, segment.slice(0, -5)) ? z.string() : undefined));
    }
    if (!node) continue;
    let target = out;
    for (const segment of path.slice(0, -1)) target = (target[segment] = isObject(target[segment]) ? target[segment] : {}) as Json;
    target[path.at(-1)!] = coerce(raw, node);
  }
  return out;
}

/** `foo_file: /run/secrets/x` sets `foo` from the file's content (without the trailing newline). */
function resolveFileKeys(value: Json, schema: z.ZodType, path: string[] = []): Json {
  const out: Json = {};
  for (const [key, child] of Object.entries(value)) {
    const childPath = [...path, key];
    if (key.endsWith('_file') && typeof child === 'string' && childSchema(schema, key.slice(0, -5))) {
      try {
        out[key.slice(0, -5)] = readFileSync(child, 'utf8').replace(/\r?\n$/, '');
      } catch (error) {
        throw new ConfigError(`config: ${childPath.join('.')}: cannot read ${child} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
      }
      continue;
    }
    const sub = childSchema(schema, key);
    out[key] = isObject(child) && sub ? resolveFileKeys(child, sub, childPath) : child;
  }
  return out;
}

export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map((issue) => `config: ${issue.path.map(String).join('.') || '(root)'}: ${issue.message} (rule: ${issue.code})`).join('\n');
}

export function loadConfig<S extends z.ZodType>(schema: S, options: LoadConfigOptions = {}): z.output<S> {
  const prefix = options.prefix ?? 'BOXYARD_';
  let fromFile: Json = {};
  if (options.file) {
    let text: string;
    try {
      text = readFileSync(options.file, 'utf8');
    } catch (error) {
      throw new ConfigError(`config: cannot read ${options.file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(text) ?? {};
    } catch (error) {
      throw new ConfigError(`config: ${options.file} is not valid YAML: ${(error as Error).message}`);
    }
    if (!isObject(parsed)) throw new ConfigError(`config: ${options.file} must hold a mapping of keys at the top level`);
    fromFile = parsed;
  }
  const layered = deepMerge(deepMerge(options.defaults ?? {}, fromFile), options.overrides ?? {});
  const merged = deepMerge(layered, envOverrides(schema, options.env ?? process.env, prefix));
  const result = schema.safeParse(resolveFileKeys(merged, schema));
  if (!result.success) throw new ConfigError(formatIssues(result.error.issues));
  return result.data;
}
