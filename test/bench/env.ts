// What every bench receives: the real components the runner started, and a scratch directory.
export type { BenchRow } from './storage.ts';

export interface BenchEnv {
  minio: { endpoint: string; accessKey: string; secretKey: string };
  /** Superuser URL of the run's PostgreSQL: create your own database in it. */
  postgresAdminUrl: string;
  /** Scratch directory (readable by the `postgres` user), removed after the run. */
  workDir: string;
}

/** Creates a database on the bench's PostgreSQL and returns its URL. */
export async function createBenchDatabase(env: BenchEnv, name: string): Promise<string> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: env.postgresAdminUrl });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(env.postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
