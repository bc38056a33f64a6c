// Forward-only SQL migrations, applied at start under an advisory lock so replicas starting together are safe.
// A migration is a file `NNNN_name.sql`; each runs in its own transaction and is recorded with its checksum,
// so an edited migration that was already applied stops start-up instead of silently diverging.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export interface MigrationSource {
  /** Namespace of the ids (`kit`, `box-repository`): the kit's and the service's migrations share one table. */
  namespace: string;
  dir: string;
}

export interface MigrationResult {
  applied: string[];
  skipped: number;
}

/** Raw SQL text as a slonik query: migration files are ours, never user input. */
export const rawSql = (text: string) => sql.unsafe(Object.assign([text], { raw: [text] }) as unknown as TemplateStringsArray);

async function readMigrations(source: MigrationSource) {
  const files = (await readdir(source.dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(join(source.dir, file), 'utf8');
      return { id: `${source.namespace}:${file.replace(/\.sql$/, '')}`, text, checksum: createHash('sha256').update(text).digest('hex') };
    }),
  );
}

const appliedRow = z.object({ id: z.string(), checksum: z.string() });

export async function migrate(pool: DatabasePool, schema: string, sources: MigrationSource[]): Promise<MigrationResult> {
  const migrations = (await Promise.all(sources.map(readMigrations))).flat();
  return pool.connect(async (connection) => {
    // Session-level lock keyed by schema: a second replica waits here until the first has finished.
    await connection.query(sql.unsafe`select pg_advisory_lock(hashtext(${`boxyard-migrate:${schema}`}))`);
    try {
      await connection.query(sql.unsafe`create schema if not exists ${sql.identifier([schema])}`);
      await connection.query(sql.unsafe`
        create table if not exists ${sql.identifier([schema, 'schema_migrations'])} (
          id text primary key,
          checksum text not null,
          applied_at timestamptz not null default now()
        )`);
      const applied = new Map(
        (await connection.any(sql.type(appliedRow)`select id, checksum from ${sql.identifier([schema, 'schema_migrations'])}`)).map((r) => [r.id, r.checksum]),
      );
      const done: string[] = [];
      for (const migration of migrations) {
        const known = applied.get(migration.id);
        if (known !== undefined) {
          if (known !== migration.checksum) throw new Error(`migration ${migration.id} was changed after it was applied (migrations are forward-only: add a new one)`);
          continue;
        }
        await connection.transaction(async (tx) => {
          await tx.query(sql.unsafe`select set_config('search_path', ${`${schema},public`}, true)`);
          await tx.query(rawSql(migration.text));
          await tx.query(sql.unsafe`insert into ${sql.identifier([schema, 'schema_migrations'])} (id, checksum) values (${migration.id}, ${migration.checksum})`);
        });
        done.push(migration.id);
      }
      return { applied: done, skipped: migrations.length - done.length };
    } finally {
      await connection.query(sql.unsafe`select pg_advisory_unlock(hashtext(${`boxyard-migrate:${schema}`}))`);
    }
  });
}
