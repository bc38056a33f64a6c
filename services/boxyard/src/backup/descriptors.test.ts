// Every table a service's migrations create is classified for backup (kept, or left out with a reason), so a new
// table fails here until someone decides; the load order respects every foreign key.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '@boxyard/kit';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { services } from '../services.ts';
import { backupDescriptors } from './descriptors.ts';
import { copyableColumns, foreignKeys, listTables } from './schema-catalog.ts';
import { loadOrder } from './table-order.ts';

let url: string;
let client: pg.Client;

beforeAll(async () => {
  url = await createTestDatabase('backup_classes');
  client = new pg.Client({ connectionString: url });
  await client.connect();
});
afterAll(() => client?.end());

describe.each(backupDescriptors.map((d) => [d.service, d] as const))('backup descriptor of %s', (service, descriptor) => {
  const schema = service.replaceAll('-', '_');

  it('classifies exactly the tables its migrations create', async () => {
    await migrate(url, schema, descriptor.migrations);
    const tables = (await listTables(client, schema)).filter((t) => t !== 'schema_migrations');
    expect(Object.keys(descriptor.tables).sort()).toEqual(tables);
    for (const [table, rule] of Object.entries(descriptor.tables)) {
      if (!rule.backup) expect(rule.reason, `${table}: say why it is left out`).toMatch(/\w/);
      else for (const column of rule.objectKeys ?? []) expect(await copyableColumns(client, schema, table)).toContain(column);
    }
  });

  it('never backs up a table that references one left out, and has a load order', async () => {
    const references = await foreignKeys(client, schema);
    const kept = Object.keys(descriptor.tables).filter((t) => descriptor.tables[t]!.backup);
    for (const { table, references: referenced } of references) if (kept.includes(table)) expect(kept, `${table} -> ${referenced}`).toContain(referenced);
    const order = loadOrder(kept, references);
    for (const { table, references: referenced } of references) {
      if (table !== referenced && kept.includes(table)) expect(order.indexOf(referenced)).toBeLessThan(order.indexOf(table));
    }
  });
});

it('every service that keeps data in PostgreSQL has a descriptor (the second service keeps none)', () => {
  const described = backupDescriptors.map((d) => d.service);
  expect(services.map((s) => s.name).filter((name) => !described.includes(name))).toEqual(['second-service']);
});

it('orders tables after the tables they reference, and refuses a cycle', () => {
  expect(
    loadOrder(
      ['c', 'b', 'a'],
      [
        { table: 'c', references: 'b' },
        { table: 'b', references: 'a' },
        { table: 'a', references: 'a' },
      ],
    ),
  ).toEqual(['a', 'b', 'c']);
  expect(() =>
    loadOrder(
      ['a', 'b'],
      [
        { table: 'a', references: 'b' },
        { table: 'b', references: 'a' },
      ],
    ),
  ).toThrow('cycle between a, b');
});
