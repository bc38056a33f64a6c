// PostgreSQL through slonik. Each service works in its own schema: the pool sets search_path to it.
import { createPool, sql, type DatabasePool } from 'slonik';

export type { DatabasePool } from 'slonik';

export async function createDatabasePool(options: { url: string; schema?: string | undefined; poolSize?: number }): Promise<DatabasePool> {
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
  });
}

export const pingDatabase = async (pool: DatabasePool): Promise<void> => {
  await pool.oneFirst(sql.unsafe`select 1`);
};
