// Structural JSON Schema for CRDs (apiextensions.k8s.io/v1): small builders for the fields declared by hand (the
// operator's common spec, a kind's cluster-only fields) and the conversion of zod's output into the same shape.
export type JsonSchema = { [key: string]: unknown };

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export const string = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });
export const integer = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', description, ...extra });
export const boolean = (description: string, defaultValue: boolean): JsonSchema => ({ type: 'boolean', description, default: defaultValue });
export const object = (description: string, properties: Record<string, JsonSchema>, extra: JsonSchema = {}): JsonSchema => ({
  type: 'object',
  description,
  properties,
  ...extra,
});
export const stringMap = (description: string): JsonSchema => ({ type: 'object', description, additionalProperties: { type: 'string' } });
/** An object Kubernetes defines (a Toleration, a NetworkPolicyPeer, ...): kept as written, not checked here. */
export const anyObject: JsonSchema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/** A resource quantity (`500m`, `1Gi`, 2), as Kubernetes' own CRDs declare it. */
export const QUANTITY: JsonSchema = {
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
  'x-kubernetes-int-or-string': true,
};

/** Requests and limits of a container, with their defaults. */
export const resources = (description: string, defaults: JsonSchema): JsonSchema =>
  object(
    description,
    {
      requests: { type: 'object', description: 'Minimum resources the scheduler reserves (cpu, memory, ephemeral-storage).', additionalProperties: QUANTITY },
      limits: { type: 'object', description: 'Maximum resources the container may use.', additionalProperties: QUANTITY },
    },
    { default: defaults },
  );

export const PULL_POLICY = string('When the kubelet pulls the image.', { enum: ['Always', 'IfNotPresent', 'Never'], default: 'IfNotPresent' });

const SAFE = Number.MAX_SAFE_INTEGER;
const INT32_MAX = 2 ** 31 - 1;
// Key order of the CRD YAML: type and description first, then what the operator's own fragments write in this order.
const KEY_ORDER = [
  'type',
  'description',
  'format',
  'properties',
  'required',
  'enum',
  'default',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'items',
];
const rank = (key: string) => (KEY_ORDER.includes(key) ? KEY_ORDER.indexOf(key) : KEY_ORDER.length);
const NOT_STRUCTURAL = ['anyOf', 'oneOf', 'allOf', 'not', '$ref'];

/**
 * zod's OpenAPI 3.0 JSON Schema as a structural CRD schema: no $schema, `additionalProperties: false` dropped (the
 * apiserver prunes unknown fields), zod's safe-integer bounds dropped, exclusive integer bounds made inclusive, and
 * integers beyond int32 marked int64.
 */
export function structuralSchema(json: JsonSchema, where: string): JsonSchema {
  const found = NOT_STRUCTURAL.find((key) => key in json);
  if (found) throw new Error(`${where}: ${found} is not a structural schema; declare the field in clusterOnly instead`);
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(json)) {
    if (key === '$schema' || (key === 'additionalProperties' && value === false)) continue;
    if (key === 'properties' && isObject(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, child]) => [name, structuralSchema(child as JsonSchema, `${where}.${name}`)]));
    else if ((key === 'items' || key === 'additionalProperties') && isObject(value)) out[key] = structuralSchema(value, `${where}[]`);
    else out[key] = value;
  }
  if (out.type === 'integer') {
    if (out.minimum === -SAFE) delete out.minimum;
    if (out.maximum === SAFE) delete out.maximum;
    if (out.exclusiveMinimum === true && typeof out.minimum === 'number') out.minimum += 1;
    if (out.exclusiveMaximum === true && typeof out.maximum === 'number') out.maximum -= 1;
    delete out.exclusiveMinimum;
    delete out.exclusiveMaximum;
    if ([out.default, out.maximum].some((n) => typeof n === 'number' && n > INT32_MAX)) out.format ??= 'int64';
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => rank(a) - rank(b)));
}
