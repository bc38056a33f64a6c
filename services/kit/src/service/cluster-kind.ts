// A service's cluster kind: what the operator needs to run the service from a custom resource (BoxRepository, ...),
// declared beside the service. The spec fields that are plain config keys are not written again: their JSON Schema
// (type, default, bounds, enum, description) is taken from the service's own zod config schema, so the CRD, the
// operator's config mapping and the service cannot disagree. Fields that exist only in the cluster (the terminal's
// session pods) are declared here as JSON Schema, with the function that turns them into config keys. The fields
// every kind shares (replicas, image, database, auth, ingress, ...) and the storage block stay with the operator.
import { z } from 'zod';
import { isObject, structuralSchema, type JsonSchema } from './cluster-schema.ts';

export type { JsonSchema };

/** A service config key a resource may set: `uploads.max_bytes` is spec `uploads.maxBytes` unless `spec` names it. */
export type ConfigField = string | { key: string; spec: string };

/** A CEL rule of a structural schema (`x-kubernetes-validations`). */
export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
}

/** What the operator knows when it renders a resource's config. */
export interface ClusterContext {
  namespace: string;
  /** Image of the service's own pods. */
  image: string;
  /** The selector labels of the service's pods. */
  podLabels: Record<string, string>;
}

export interface ClusterOnlyFields {
  /** Top-level spec fields, as structural JSON Schema (descriptions, defaults and bounds included). */
  schema: Record<string, JsonSchema>;
  /** The config keys these fields become (the spec arrives with the CRD defaults filled in). */
  toConfig(spec: Record<string, unknown>, context: ClusterContext): Record<string, unknown>;
}

export interface ClusterKind {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  /** Description of the resource (the CRD's top-level description). */
  description: string;
  /** The service the pods run (`boxyard serve <service>`); also the suffix of every child's name. */
  service: string;
  port: number;
  /** Default of spec.database.schema. */
  databaseSchema: string;
  /**
   * Uses S3-compatible object storage (the spec's storage block, which the operator declares and checks): `true`
   * requires the block; `'optional'` offers it (the terminal keeps recordings there when a pool has one).
   */
  storage: boolean | 'optional';
  /** Needs a ServiceAccount allowed to manage pods in its namespace (the terminal gateway starts session pods). */
  managesPods: boolean;
  /** The service's strict config schema, the source of the configFields' JSON Schema. */
  configSchema: z.ZodType;
  configFields: ConfigField[];
  clusterOnly?: ClusterOnlyFields;
  /** CEL rules on spec objects, by spec path (e.g. `sessions`). */
  validations?: Record<string, CelRule[]>;
}

export const camelCase = (key: string): string => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The config key and spec path of a field. */
export function fieldPaths(field: ConfigField): { key: string[]; spec: string[] } {
  const key = typeof field === 'string' ? field : field.key;
  const spec = typeof field === 'string' ? key.split('.').map(camelCase).join('.') : field.spec;
  return { key: key.split('.'), spec: spec.split('.') };
}

/** The service's config as OpenAPI 3.0 JSON Schema of what a config file may hold (defaults, optional keys). */
const configJsonSchema = (kind: ClusterKind): JsonSchema =>
  z.toJSONSchema(kind.configSchema, { io: 'input', target: 'openapi-3.0', unrepresentable: 'any' }) as JsonSchema;

function configNode(root: JsonSchema, path: string[], kind: ClusterKind): JsonSchema {
  let node: JsonSchema = root;
  for (const [i, name] of path.entries()) {
    const child = (node.properties as Record<string, JsonSchema> | undefined)?.[name];
    if (!child) throw new Error(`${kind.kind}: ${kind.service}'s config has no key ${path.slice(0, i + 1).join('.')}`);
    node = child;
  }
  return node;
}

const described = (schema: JsonSchema, what: string): JsonSchema => {
  if (typeof schema.description !== 'string' || !schema.description) throw new Error(`${what} has no description: add .describe() to it in the config schema`);
  return schema;
};

/**
 * The kind's own spec fields: the config fields (nested as their spec paths; a spec object takes the description and
 * the `{}` default of the config section it stands for), then the cluster-only fields, with the kind's CEL rules.
 */
export function kindSpecProperties(kind: ClusterKind): Record<string, JsonSchema> {
  const config = configJsonSchema(kind);
  const properties: Record<string, JsonSchema> = {};
  for (const field of kind.configFields) {
    const { key, spec } = fieldPaths(field);
    let parent = properties;
    for (const [i, name] of spec.slice(0, -1).entries()) {
      if (!parent[name]) {
        const sectionKey = key.slice(0, i + 1);
        const section = described(configNode(config, sectionKey, kind), `${kind.kind}: config section ${sectionKey.join('.')}`);
        if (spec.slice(0, i + 1).join('.') !== sectionKey.map(camelCase).join('.'))
          throw new Error(`${kind.kind}: spec object ${spec.slice(0, i + 1).join('.')} does not stand for a config section`);
        parent[name] = { type: 'object', description: section.description, properties: {}, ...(section.default !== undefined ? { default: {} } : {}) };
      }
      parent = parent[name].properties as Record<string, JsonSchema>;
    }
    const where = `${kind.kind}: config key ${key.join('.')}`;
    parent[spec.at(-1)!] = structuralSchema(described(configNode(config, key, kind), where), where);
  }
  Object.assign(properties, kind.clusterOnly?.schema);
  for (const [path, rules] of Object.entries(kind.validations ?? {})) {
    const target = path
      .split('.')
      .reduce<JsonSchema | undefined>(
        (node, name, i) => (i === 0 ? properties[name] : (node?.properties as Record<string, JsonSchema> | undefined)?.[name]),
        undefined,
      );
    if (!target) throw new Error(`${kind.kind}: validations name ${path}, which is not a spec field`);
    target['x-kubernetes-validations'] = rules;
  }
  return properties;
}

const get = (value: unknown, path: string[]): unknown => path.reduce<unknown>((v, name) => (isObject(v) ? v[name] : undefined), value);

function set(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const name of path.slice(0, -1)) node = (node[name] = isObject(node[name]) ? node[name] : {}) as Record<string, unknown>;
  node[path.at(-1)!] = value;
}

/** The config keys a resource's spec sets: each config field where the spec has a value, then the cluster-only ones. */
export function configFromSpec(kind: ClusterKind, spec: Record<string, unknown>, context: ClusterContext): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const field of kind.configFields) {
    const { key, spec: path } = fieldPaths(field);
    const value = get(spec, path);
    if (value !== undefined) set(config, key, value);
  }
  for (const [key, value] of Object.entries(kind.clusterOnly?.toConfig(spec, context) ?? {})) {
    config[key] = isObject(config[key]) && isObject(value) ? { ...config[key], ...value } : value;
  }
  return config;
}
