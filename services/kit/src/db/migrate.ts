// Forward-only SQL migrations, applied at start under an advisory lock so replicas starting together are safe.
// A migration is a file `NNNN_name.sql` (any number of statements); each runs in its own transaction and is
// recorded with its checksum, so an edited migration that was already applied stops start-up instead of
// silently diverging. Runs on its own pg connection: slonik refuses multi-statement scripts, by design.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { ignoreError } from '../errors/ignore-error.ts';

export interface MigrationSource {
  /** Namespace of the ids (`kit-rate-limit`, `box-repository`): kit and service migrations share one table. */
  namespace: string;
  dir: string;
}

export interface MigrateOptions {
  /**
   * Apply only these ids (and fail if one is unknown): a restore recreates the schema exactly as the backup had
   * it, and the service applies its newer migrations itself on its next start.
   */
  only?: ReadonlySet<string>;
}

export interface MigrationResult {
  applied: string[];
  skipped: number;
}

async function readMigrations(source: MigrationSource) {
  const files = (await readdir(source.dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(join(source.dir, file), 'utf8');
      return { id: `${source.namespace}:${file.replace(/\.sql$/, '')}`, text, checksum: createHash('sha256').update(text).digest('hex') };
    }),
  );
}

/** Ids and checksums of the migrations these sources hold, in the order `migrate` applies them. */
export async function listMigrations(sources: MigrationSource[]): Promise<{ id: string; checksum: string }[]> {
  return (await Promise.all(sources.map(readMigrations))).flat().map(({ id, checksum }) => ({ id, checksum }));
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function migrate(url: string, schema: string, sources: MigrationSource[], options: MigrateOptions = {}): Promise<MigrationResult> {
  let migrations = (await Promise.all(sources.map(readMigrations))).flat();
  if (options.only) {
    const { only } = options;
    const unknown = [...only].filter((id) => !migrations.some((m) => m.id === id));
    if (unknown.length > 0) throw new Error(`unknown migrations: ${unknown.join(', ')}`);
    migrations = migrations.filter((m) => only.has(m.id));
  }
  const client = new pg.Client({ connectionString: url, application_name: `boxyard-migrate-${schema}` });
  await client.connect();
  const lockKey = `boxyard-migrate:${schema}`;
  try {
    // Session-level lock keyed by schema: a second replica waits here until the first has finished.
    await client.query('select pg_advisory_lock(hashtext($1))', [lockKey]);
    await client.query(`create schema if not exists ${ident(schema)}`);
    await client.query(`set search_path to ${ident(schema)}, public`);
    await client.query(
      `create table if not exists schema_migrations (id text primary key, checksum text not null, applied_at timestamptz not null default now())`,
    );
    const applied = new Map(
      (await client.query<{ id: string; checksum: string }>('select id, checksum from schema_migrations')).rows.map((r) => [r.id, r.checksum]),
    );
    const done: string[] = [];
    for (const migration of migrations) {
      const known = applied.get(migration.id);
      if (known !== undefined) {
        if (known !== migration.checksum)
          throw new Error(`migration ${migration.id} was changed after it was applied (migrations are forward-only: add a new one)`);
        continue;
      }
      try {
        await client.query('begin');
        await client.query(migration.text);
        await client.query('insert into schema_migrations (id, checksum) values ($1, $2)', [migration.id, migration.checksum]);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw new Error(`migration ${migration.id} failed: ${(error as Error).message}`, { cause: error });
      }
      done.push(migration.id);
    }
    return { applied: done, skipped: migrations.length - done.length };
  } finally {
    await client.query('select pg_advisory_unlock(hashtext($1))', [lockKey]).catch(ignoreError('the advisory lock goes with the session, which ends next'));
    await client.end();
  }
}
