// One consistent picture of one database: a single REPEATABLE READ, READ ONLY transaction reads every table of
// every service schema in it (COPY ... TO STDOUT, streamed to files) and the object keys those rows name.
// Services store an object's bytes before the row naming it commits, and never rewrite a key, so every key in
// the snapshot names a complete object; an upload still in flight is either in it (row and bytes) or not at all.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { BackupError } from './errors.ts';
import { writeStreamToFile } from './files.ts';
import type { SequenceRecord, TableRecord } from './manifest.ts';
import { copyableColumns, foreignKeys, listTables, qualified, quoteIdent, schemaExists, sequenceStates } from './schema-catalog.ts';
import { describeDatabase, type ServiceTarget } from './service-targets.ts';
import { loadOrder } from './table-order.ts';

export interface ServiceSnapshot {
  schema: string;
  migrations: { id: string; checksum: string }[];
  tables: TableRecord[];
  sequences: SequenceRecord[];
  /** Object keys the rows name. */
  keys: Set<string>;
}

export interface DatabaseSnapshot {
  postgresVersion: string;
  /** Services whose schema exists (one never started has nothing to back up). */
  services: Map<string, ServiceSnapshot>;
}

/** Reads the snapshot; table files go to `<backupDir>/<tablesDir>/<service>/<table>.copy` (replaced on a retry). */
export async function takeSnapshot(url: string, targets: readonly ServiceTarget[], backupDir: string, tablesDir: string): Promise<DatabaseSnapshot> {
  const client = new pg.Client({ connectionString: url, application_name: 'boxyard-backup' });
  await client.connect().catch((error: unknown) => {
    throw new BackupError(`cannot connect to ${describeDatabase(url)}: ${(error as Error).message}`);
  });
  try {
    await client.query('begin isolation level repeatable read, read only');
    const postgresVersion = (await client.query<{ server_version: string }>('show server_version')).rows[0]!.server_version;
    const services = new Map<string, ServiceSnapshot>();
    for (const target of targets) {
      if (!(await schemaExists(client, target.schema))) continue;
      services.set(target.name, await snapshotService(client, target, backupDir, join(tablesDir, target.name)));
    }
    await client.query('commit');
    return { postgresVersion, services };
  } finally {
    await client.end();
  }
}

async function snapshotService(client: pg.Client, target: ServiceTarget, backupDir: string, tablesDir: string): Promise<ServiceSnapshot> {
  const { schema, descriptor } = target;
  const present = (await listTables(client, schema)).filter((t) => t !== 'schema_migrations');
  const unclassified = present.filter((t) => !descriptor.tables[t]);
  if (unclassified.length > 0) {
    throw new Error(
      `${target.name}: table(s) ${unclassified.join(', ')} in schema ${schema} are not classified for backup (add them to the service's src/backup.ts)`,
    );
  }
  const data = present.filter((t) => descriptor.tables[t]!.backup);
  const references = await foreignKeys(client, schema);
  for (const { table, references: referenced } of references) {
    if (data.includes(table) && !data.includes(referenced))
      throw new Error(`${target.name}: table ${table} is backed up but references ${referenced}, which is not`);
  }
  const migrations = (
    await client.query<{ id: string; checksum: string }>(`select id, checksum from ${qualified(schema, 'schema_migrations')} order by applied_at, id`)
  ).rows;

  const tables: TableRecord[] = [];
  const keys = new Set<string>();
  for (const table of loadOrder(data, references)) {
    const columns = await copyableColumns(client, schema, table);
    const file = join(tablesDir, `${table}.copy`);
    await rm(join(backupDir, file), { force: true }); // an earlier attempt's
    const stream = client.query(copyTo(`copy ${qualified(schema, table)} (${columns.map(quoteIdent).join(', ')}) to stdout`));
    const digest = await writeStreamToFile(join(backupDir, file), stream);
    tables.push({ name: table, columns, rows: stream.rowCount, file, ...digest });
    const rule = descriptor.tables[table]!;
    for (const column of (rule.backup && rule.objectKeys) || []) {
      const result = await client.query<{ key: string }>(
        `select distinct ${quoteIdent(column)} as key from ${qualified(schema, table)} where ${quoteIdent(column)} is not null`,
      );
      for (const row of result.rows) keys.add(row.key);
    }
  }
  const sequences = await sequenceStates(client, schema, data);
  return { schema, migrations, tables, sequences, keys };
}
