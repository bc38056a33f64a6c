// The kinds agree with their services: each names a registered service, and the port and database schema the
// operator gives its pods are the service's own defaults.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { kindSpecProperties } from '@boxyard/kit/service/cluster-kind.ts';
import { kinds, services } from './index.ts';

type Node = { default?: unknown; properties?: Record<string, Node> };
const defaultOf = (schema: z.ZodType, path: string[]) =>
  path.reduce<Node | undefined>((node, key) => node?.properties?.[key], z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Node)?.default;

describe('cluster kinds', () => {
  it('are unique and each runs a registered service', () => {
    expect(new Set(kinds.map((k) => k.kind)).size).toBe(kinds.length);
    expect(new Set(kinds.map((k) => k.plural)).size).toBe(kinds.length);
    for (const kind of kinds)
      expect(
        services.map((s) => s.name),
        kind.kind,
      ).toContain(kind.service);
  });

  it("give the pods the service's own default port and database schema", () => {
    for (const kind of kinds) {
      expect(defaultOf(kind.configSchema, ['server', 'port']), kind.kind).toBe(kind.port);
      expect(defaultOf(kind.configSchema, ['database', 'schema']), kind.kind).toBe(kind.databaseSchema);
    }
  });

  it('derive their spec fields from the config schemas', () => {
    for (const kind of kinds) expect(Object.keys(kindSpecProperties(kind)).length, kind.kind).toBeGreaterThan(0);
  });
});
