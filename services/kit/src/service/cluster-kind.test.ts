// A kind's spec fields come from its service's zod schema: the JSON Schema is structural (what a CRD accepts), the
// spec paths are the config keys in camelCase, and a resource's values go back to the same keys.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configFromSpec, kindSpecProperties, type ClusterKind } from './cluster-kind.ts';
import { structuralSchema } from './cluster-schema.ts';

const config = z.strictObject({
  uploads: z
    .strictObject({
      max_bytes: z
        .number()
        .int()
        .positive()
        .default(8 * 1024 ** 3)
        .describe('Largest file accepted.'),
      stall_seconds: z.number().positive().max(600).default(60).describe('Stall timeout.'),
      internal: z.boolean().default(false),
    })
    .prefault({})
    .describe('Uploads.'),
  auth: z.strictObject({ sign_up: z.enum(['open', 'off']).default('off').describe('Who may sign up.') }).prefault({}),
  limits: z.strictObject({ burst: z.number().int().min(1).max(10).describe('Burst.') }).describe('Limits.'),
  lifetime: z.union([z.number(), z.string()]).default(60).describe('A number or a text.'),
  undescribed: z.number().default(1),
});

const kind = (over: Partial<ClusterKind> = {}): ClusterKind => ({
  kind: 'Example',
  plural: 'examples',
  singular: 'example',
  shortNames: [],
  description: 'An example.',
  service: 'example',
  port: 3999,
  databaseSchema: 'example',
  storage: false,
  managesPods: false,
  configSchema: config,
  configFields: ['uploads.max_bytes', 'uploads.stall_seconds', { key: 'auth.sign_up', spec: 'signUp' }, 'limits.burst'],
  ...over,
});

const context = { namespace: 'team', image: 'example:1', podLabels: { app: 'example' } };

describe('kindSpecProperties', () => {
  it('takes types, defaults, bounds, enums and descriptions from the config schema, nested as camelCase spec paths', () => {
    expect(kindSpecProperties(kind())).toEqual({
      uploads: {
        type: 'object',
        description: 'Uploads.',
        properties: {
          maxBytes: { type: 'integer', description: 'Largest file accepted.', format: 'int64', default: 8 * 1024 ** 3, minimum: 1 },
          stallSeconds: { type: 'number', description: 'Stall timeout.', default: 60, minimum: 0, exclusiveMinimum: true, maximum: 600 },
        },
        default: {},
      },
      signUp: { type: 'string', description: 'Who may sign up.', enum: ['open', 'off'], default: 'off' },
      // No default in the config: no `{}` default in the CRD either.
      limits: { type: 'object', description: 'Limits.', properties: { burst: { type: 'integer', description: 'Burst.', minimum: 1, maximum: 10 } } },
    });
  });

  it('adds the cluster-only fields and the CEL rules', () => {
    const properties = kindSpecProperties(
      kind({
        clusterOnly: { schema: { origins: { type: 'array', description: 'Origins.', items: { type: 'string' } } }, toConfig: () => ({}) },
        validations: { uploads: [{ rule: 'self.maxBytes > 0', message: 'positive' }] },
      }),
    );
    expect(properties.origins).toEqual({ type: 'array', description: 'Origins.', items: { type: 'string' } });
    expect(properties.uploads!['x-kubernetes-validations']).toEqual([{ rule: 'self.maxBytes > 0', message: 'positive' }]);
  });

  it('refuses keys the config lacks, fields without a description, and schemas a CRD cannot hold', () => {
    expect(() => kindSpecProperties(kind({ configFields: ['uploads.nothing'] }))).toThrow(/config has no key uploads\.nothing/);
    expect(() => kindSpecProperties(kind({ configFields: ['undescribed'] }))).toThrow(/undescribed has no description/);
    expect(() => kindSpecProperties(kind({ configFields: ['uploads.internal'] }))).toThrow(/uploads\.internal has no description/);
    expect(() => kindSpecProperties(kind({ configFields: ['lifetime'] }))).toThrow(/anyOf is not a structural schema/);
    expect(() => kindSpecProperties(kind({ validations: { nothing: [] } }))).toThrow(/validations name nothing/);
  });
});

describe('structuralSchema', () => {
  it('drops $schema, closed objects and the safe-integer bounds; makes integer bounds inclusive', () => {
    expect(structuralSchema({ $schema: 'x', type: 'object', additionalProperties: false, properties: {} }, 'x')).toEqual({ type: 'object', properties: {} });
    expect(structuralSchema({ type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }, 'x')).toEqual({ type: 'integer' });
    expect(structuralSchema({ type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true }, 'x')).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 9,
    });
    expect(structuralSchema({ type: 'integer', maximum: 2 ** 32 }, 'x')).toEqual({ type: 'integer', format: 'int64', maximum: 2 ** 32 });
  });
});

describe('configFromSpec', () => {
  it('writes each set field to its config key, then what the cluster-only fields become', () => {
    const withOrigins = kind({ clusterOnly: { schema: {}, toConfig: (spec, c) => ({ auth: { origins: spec.origins }, pool: c.namespace }) } });
    const spec = { uploads: { maxBytes: 10, stallSeconds: 5 }, signUp: 'open', origins: ['https://a.example'], replicas: 3 };
    expect(configFromSpec(withOrigins, spec, context)).toEqual({
      uploads: { max_bytes: 10, stall_seconds: 5 },
      auth: { sign_up: 'open', origins: ['https://a.example'] },
      pool: 'team',
    });
    // What the spec leaves out stays out (the service's default applies).
    expect(configFromSpec(kind(), { signUp: 'off' }, context)).toEqual({ auth: { sign_up: 'off' } });
  });

  it('gives config the service loads', () => {
    const spec = { uploads: { maxBytes: 10, stallSeconds: 5 }, signUp: 'open', limits: { burst: 2 } };
    expect(config.parse(configFromSpec(kind(), spec, context))).toMatchObject({
      uploads: { max_bytes: 10, stall_seconds: 5 },
      auth: { sign_up: 'open' },
      limits: { burst: 2 },
    });
  });
});
