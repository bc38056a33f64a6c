// PostgreSQL through slonik. Each service works in its own schema: the pool sets search_path to it.
import type { Registry } from '@prometheus-io/client';
import { SchemaValidationError, createPool, sql, type DatabasePool, type Interceptor, type QueryResultRow } from 'slonik';
import { databaseErrorInterceptor } from '../metrics/database-metrics.ts';
import { databaseSpanInterceptor } from '../telemetry/database-spans.ts';

export type { DatabasePool } from 'slonik';

/**
 * Rows of `sql.type(schema)` queries are validated and transformed by their schema (slonik leaves this to an
 * interceptor): a row that does not match is an error, never silently mistyped data.
 */
const resultParser: Interceptor = {
  name: 'boxyard-result-parser',
  transformRowAsync: async (context, query, row) => {
    const parser = context.resultParser;
    if (!parser) return row;
    const result = await parser['~standard'].validate(row);
    if (result.issues) throw new SchemaValidationError(query, row, result.issues);
    return result.value as QueryResultRow;
  },
};

export async function createDatabasePool(options: { url: string; schema?: string | undefined; poolSize?: number; metrics?: Registry }): Promise<DatabasePool> {
  const url = new URL(options.url);
  if (options.schema) {
    // libpq `options`: every connection starts in the service's schema (then public for extensions).
    url.searchParams.set('options', `-c search_path=${options.schema},public`);
  }
  return createPool(url.toString(), {
    maxPoolSize: options.poolSize ?? 10,
    // Our own timeouts: a query that hangs must not hold a request forever.
    statementTimeout: 30_000,
    idleTimeout: 10_000,
    connectionTimeout: 5_000,
    captureStackTrace: false,
    interceptors: [resultParser, databaseSpanInterceptor(options.url), ...(options.metrics ? [databaseErrorInterceptor(options.metrics)] : [])],
    // slonik's default reset runs DISCARD ALL whenever a connection returns to the pool, doubling the round trips
    // of every query. Services keep no session state (search_path and timeouts are startup parameters).
    resetConnection: async () => {},
  });
}

export const pingDatabase = async (pool: DatabasePool): Promise<void> => {
  await pool.oneFirst(sql.unsafe`select 1`);
};
