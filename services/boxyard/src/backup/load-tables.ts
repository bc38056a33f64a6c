// Restore's database step for one database: each service's schema gets exactly the backup's migrations (its
// newer ones, if this Boxyard has any, run at the service's next start), then every table is loaded in one
// transaction: all of it, or nothing.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ignoreError, migrate } from '@boxyard/kit';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { ServiceRecord } from './manifest.ts';
import { qualified, quoteIdent } from './schema-catalog.ts';
import type { ServiceTarget } from './service-targets.ts';

export interface LoadItem {
  target: ServiceTarget;
  record: ServiceRecord;
}

export async function loadDatabase(url: string, items: readonly LoadItem[], backupDir: string): Promise<void> {
  for (const { target, record } of items) {
    await migrate(url, target.schema, target.descriptor.migrations, { only: new Set(record.migrations.map((m) => m.id)) });
  }
  const client = new pg.Client({ connectionString: url, application_name: 'boxyard-restore' });
  await client.connect();
  try {
    await client.query('begin');
    for (const { target, record } of items) await loadService(client, target, record, backupDir);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(ignoreError("the load's own error is the one reported; the connection ends next"));
    throw error;
  } finally {
    await client.end();
  }
}

async function loadService(client: pg.Client, target: ServiceTarget, record: ServiceRecord, backupDir: string): Promise<void> {
  const { schema } = target;
  if (record.tables.length === 0) return;
  // The schema was empty before its migrations ran; rows they seed (the share's root folder, singletons) are
  // in the backup too, so they go first. CASCADE reaches only tables the migrations just created.
  await client.query(`truncate ${record.tables.map((t) => qualified(schema, t.name)).join(', ')} cascade`);
  for (const table of record.tables) {
    const stream = client.query(copyFrom(`copy ${qualified(schema, table.name)} (${table.columns.map(quoteIdent).join(', ')}) from stdin`));
    await pipeline(createReadStream(join(backupDir, table.file)), stream);
    if (stream.rowCount !== table.rows) throw new Error(`${target.name}: table ${table.name} loaded ${stream.rowCount} rows, the backup has ${table.rows}`);
  }
  // Identity values continue where the backup's left off (COPY writes ids as given, like OVERRIDING SYSTEM VALUE).
  for (const sequence of record.sequences) {
    await client.query('select setval(pg_get_serial_sequence($1, $2), $3::bigint, $4)', [
      qualified(schema, sequence.table),
      sequence.column,
      sequence.last_value,
      sequence.is_called,
    ]);
  }
}
