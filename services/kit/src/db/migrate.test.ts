// Migrations against a real PostgreSQL: per-service schema, advisory lock for concurrent replicas, forward-only.
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { listMigrations, migrate } from './migrate.ts';
import { createDatabasePool, pingDatabase, type DatabasePool } from './pool.ts';

const fixtures = fileURLToPath(new URL('./test-migrations', import.meta.url));
let url: string;
const pools: DatabasePool[] = [];
const pool = async (schema?: string) => {
  const p = await createDatabasePool({ url, schema, poolSize: 3 });
  pools.push(p);
  return p;
};

beforeAll(async () => {
  url = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

describe('migrate', () => {
  it('applies each migration once even when two replicas start together', async () => {
    const a = await pool('svc');
    const results = await Promise.all([
      migrate(url, 'svc', [{ namespace: 'svc', dir: join(fixtures, 'a') }]),
      migrate(url, 'svc', [{ namespace: 'svc', dir: join(fixtures, 'a') }]),
    ]);
    expect(results.map((r) => r.applied.length).sort()).toEqual([0, 2]);
    // The insert in 0001 ran exactly once, and the tables live in the service's schema.
    const rows = await a.any(sql.type(z.object({ name: z.string(), size: z.number() }))`select name, size from widgets`);
    expect(rows).toEqual([{ name: 'first', size: 1 }]);
    const where = await a.oneFirst(sql.type(z.object({ s: z.string() }))`select table_schema as s from information_schema.tables where table_name = 'widgets'`);
    expect(where).toBe('svc');
    await pingDatabase(a);
  });

  it('rolls back a failing migration entirely and records nothing', async () => {
    const p = await pool('broken');
    await expect(migrate(url, 'broken', [{ namespace: 'b', dir: join(fixtures, 'b') }])).rejects.toThrow(/this_function_does_not_exist/);
    const tables = await p.anyFirst(
      sql.type(z.object({ t: z.string() }))`select table_name as t from information_schema.tables where table_schema = 'broken' order by 1`,
    );
    expect(tables).toEqual(['schema_migrations']);
  });

  it('refuses to start when an applied migration was edited (forward-only)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mig-'));
    cpSync(join(fixtures, 'a'), dir, { recursive: true });
    await migrate(url, 'edited', [{ namespace: 'e', dir }]);
    writeFileSync(join(dir, '0002_widget_size.sql'), 'alter table widgets add column size bigint;\n');
    await expect(migrate(url, 'edited', [{ namespace: 'e', dir }])).rejects.toThrow('migration e:0002_widget_size was changed after it was applied');
  });

  it("applies only the given ids when asked (a restore recreates the backup's schema), and refuses unknown ids", async () => {
    const source = { namespace: 'o', dir: join(fixtures, 'a') };
    expect((await listMigrations([source])).map((m) => m.id)).toEqual(['o:0001_widgets', 'o:0002_widget_size']);
    const result = await migrate(url, 'only', [source], { only: new Set(['o:0001_widgets']) });
    expect(result.applied).toEqual(['o:0001_widgets']);
    const p = await pool('only');
    const columns = await p.anyFirst(
      sql.type(
        z.object({ c: z.string() }),
      )`select column_name as c from information_schema.columns where table_schema = 'only' and table_name = 'widgets' order by 1`,
    );
    expect(columns).not.toContain('size');
    await expect(migrate(url, 'only', [source], { only: new Set(['o:0009_missing']) })).rejects.toThrow('unknown migrations: o:0009_missing');
    // The next ordinary start applies the rest.
    expect((await migrate(url, 'only', [source])).applied).toEqual(['o:0002_widget_size']);
  });
});
