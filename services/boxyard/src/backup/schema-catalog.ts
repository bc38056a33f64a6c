// What PostgreSQL's catalog says about a service's schema: its tables, their columns, the foreign keys between
// them and the sequences behind identity and serial columns. Read inside the backup's snapshot transaction.
import type pg from 'pg';

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
export const qualified = (schema: string, table: string) => `${quoteIdent(schema)}.${quoteIdent(table)}`;

export async function schemaExists(client: pg.ClientBase, schema: string): Promise<boolean> {
  return (await client.query('select 1 from pg_namespace where nspname = $1', [schema])).rowCount === 1;
}

/** Ordinary and partitioned tables of the schema, by name. */
export async function listTables(client: pg.ClientBase, schema: string): Promise<string[]> {
  const result = await client.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = $1 and c.relkind in ('r', 'p') and not c.relispartition order by 1`,
    [schema],
  );
  return result.rows.map((r) => r.name);
}

/** Columns COPY can write back (generated columns are computed, not loaded), in table order. */
export async function copyableColumns(client: pg.ClientBase, schema: string, table: string): Promise<string[]> {
  const result = await client.query<{ name: string }>(
    `select a.attname as name from pg_attribute a
     where a.attrelid = to_regclass($1) and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
     order by a.attnum`,
    [qualified(schema, table)],
  );
  return result.rows.map((r) => r.name);
}

/** Foreign keys between tables of the schema: `table` references `references`. */
export async function foreignKeys(client: pg.ClientBase, schema: string): Promise<{ table: string; references: string }[]> {
  const result = await client.query<{ table: string; references: string; references_schema: string }>(
    `select t.relname as table, r.relname as references, rn.nspname as references_schema
     from pg_constraint c
     join pg_class t on t.oid = c.conrelid join pg_namespace tn on tn.oid = t.relnamespace
     join pg_class r on r.oid = c.confrelid join pg_namespace rn on rn.oid = r.relnamespace
     where c.contype = 'f' and tn.nspname = $1`,
    [schema],
  );
  for (const row of result.rows) {
    // Each service's schema is self-contained; a reference out of it could not be restored into another database.
    if (row.references_schema !== schema)
      throw new Error(`table ${schema}.${row.table} references ${row.references_schema}.${row.references}, outside its schema`);
  }
  return result.rows.map(({ table, references }) => ({ table, references }));
}

/** Identity and serial columns with the state of their sequence (non-transactional: never behind the rows). */
export async function sequenceStates(client: pg.ClientBase, schema: string, tables: readonly string[]) {
  const columns = await client.query<{ table: string; column: string; sequence: string | null }>(
    `select c.table_name as table, c.column_name as column,
            pg_get_serial_sequence(format('%I.%I', c.table_schema, c.table_name), c.column_name) as sequence
     from information_schema.columns c where c.table_schema = $1 and c.table_name = any($2)
     order by c.table_name, c.ordinal_position`,
    [schema, tables],
  );
  const states: { table: string; column: string; last_value: string; is_called: boolean }[] = [];
  for (const { table, column, sequence } of columns.rows) {
    if (!sequence) continue;
    // `sequence` comes quoted from pg_get_serial_sequence.
    const state = await client.query<{ last_value: string; is_called: boolean }>(`select last_value::text, is_called from ${sequence}`);
    states.push({ table, column, ...state.rows[0]! });
  }
  return states;
}
