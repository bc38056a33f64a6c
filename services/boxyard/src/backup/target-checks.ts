// A restore never clobbers: each service's schema must be missing or hold no tables, and its storage must hold
// no objects. What the check finds is remembered so that a restore that fails half-way can undo exactly its own
// work (drop the schema it created, delete the objects it wrote) and can be run again.
import pg from 'pg';
import { createObjectStore, type ObjectStore } from '@boxyard/kit';
import { BackupError } from './errors.ts';
import { listTables, qualified, quoteIdent, schemaExists } from './schema-catalog.ts';
import { describeDatabase, type ServiceTarget } from './service-targets.ts';

export interface CheckedTarget {
  target: ServiceTarget;
  /** Whether the schema existed before the restore (empty); if not, undoing drops it. */
  schemaExisted: boolean;
  store: ObjectStore | undefined;
}

export async function checkTargetIsEmpty(target: ServiceTarget): Promise<CheckedTarget> {
  const where = `${target.name}: schema ${target.schema} in ${describeDatabase(target.databaseUrl)}`;
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect().catch((error: unknown) => {
    throw new BackupError(`${target.name}: cannot connect to ${describeDatabase(target.databaseUrl)}: ${(error as Error).message}`);
  });
  let schemaExisted: boolean;
  try {
    schemaExisted = await schemaExists(client, target.schema);
    const tables = schemaExisted ? await listTables(client, target.schema) : [];
    if (tables.length > 0) {
      const counts = [];
      for (const table of tables) {
        const rows = Number((await client.query<{ n: string }>(`select count(*) as n from ${qualified(target.schema, table)}`)).rows[0]!.n);
        if (rows > 0) counts.push(`${table}: ${rows} row${rows === 1 ? '' : 's'}`);
      }
      throw new BackupError(
        `${where} already holds ${counts.length > 0 ? `data (${counts.slice(0, 3).join(', ')}${counts.length > 3 ? ', ...' : ''})` : `tables (${tables.join(', ')})`}: ` +
          `restore only writes into an empty installation (a new BOXYARD_HOME, or --config naming an empty database and bucket)`,
      );
    }
  } finally {
    await client.end();
  }
  let store: ObjectStore | undefined;
  if (target.storage) {
    store = createObjectStore(target.storage);
    await store.check().catch((error: unknown) => {
      throw new BackupError(`${target.name}: its storage is not usable: ${(error as Error).message}`);
    });
    for await (const object of store.list('')) {
      const place =
        target.storage.driver === 'local'
          ? target.storage.root
          : `bucket ${target.storage.bucket}${target.storage.prefix ? ` (prefix ${target.storage.prefix})` : ''}`;
      throw new BackupError(`${target.name}: its storage (${place}) already holds objects (e.g. ${object.key}): restore only writes into empty storage`);
    }
  }
  return { target, schemaExisted, store };
}

/** Undoes a failed restore's database work: the schema was missing or empty before, so what is in it now is ours. */
export async function dropRestoredSchema(checked: CheckedTarget): Promise<void> {
  const { target } = checked;
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  try {
    if (!checked.schemaExisted) await client.query(`drop schema if exists ${quoteIdent(target.schema)} cascade`);
    else for (const table of await listTables(client, target.schema)) await client.query(`drop table if exists ${qualified(target.schema, table)} cascade`);
  } finally {
    await client.end();
  }
}
