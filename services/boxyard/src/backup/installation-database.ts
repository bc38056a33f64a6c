// The PostgreSQL of an installation, for backup and restore: an external URL as configured, or the home's
// embedded server. A running `boxyard dev` already serves it (then we only connect, after checking that the
// server on that port really is this home's); otherwise it is started just for the command and stopped after.
import { existsSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, type RunningPostgres } from '../embedded-postgres.ts';
import { DATABASE_NAME, embeddedPostgresDir, installationDatabase } from '../home.ts';
import type { Installation } from '../run-all.ts';
import { BackupError } from './errors.ts';
import { ignoreError } from '@boxyard/kit';

export interface InstallationDatabase {
  /** The database the services use (each in its own schema), unless a service's config names another. */
  url: string;
  /** How to name it to the user. */
  description: string;
  /** The embedded data directory when this command created it (initdb): a failed restore removes it again. */
  createdDataDir: string | undefined;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** The embedded server's superuser password (secrets.json's postgres_password). */
  password: string;
  /** Restore: create the data directory and the database when missing. Backup: both must exist. */
  create: boolean;
  log?: (line: string) => void;
}

const errorCode = (error: unknown) => (error as { code?: string }).code;

export async function openInstallationDatabase(installation: Installation, options: OpenOptions): Promise<InstallationDatabase> {
  if ('url' in installation.database) {
    return {
      url: installation.database.url,
      description: `${new URL(installation.database.url).host} (external)`,
      createdDataDir: undefined,
      close: async () => {},
    };
  }
  const { port } = installation.database.embedded;
  const { dir } = await embeddedPostgresDir(installation.home);
  const adminUrl = `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`;
  let server: RunningPostgres | undefined;
  let description = `embedded, port ${port} (the running boxyard dev)`;
  let createdDataDir: string | undefined;
  try {
    await checkRunningServerIsOurs(adminUrl, dir, port);
  } catch (error) {
    if (errorCode(error) !== 'ECONNREFUSED') throw error;
    if (!options.create && !existsSync(join(dir, 'PG_VERSION'))) {
      throw new BackupError(`no PostgreSQL data in ${dir}: ${installation.home} holds no Boxyard installation to back up`);
    }
    options.log?.(`starting the embedded PostgreSQL of ${installation.home} on port ${port} for this command`);
    await mkdir(installation.home, { recursive: true, mode: 0o755 });
    if (!existsSync(join(dir, 'PG_VERSION'))) createdDataDir = dir;
    server = await startPostgres({ dir, port, persistent: true, password: options.password }).catch((startError: unknown) => {
      throw new BackupError(`could not start the embedded PostgreSQL in ${dir}: ${(startError as Error).message.split('\n')[0]}`);
    });
    description = `embedded, port ${port} (started for this command)`;
  }
  try {
    const url = await installationDatabase(adminUrl, { create: options.create });
    if (!url) throw new BackupError(`the embedded PostgreSQL has no database ${DATABASE_NAME}: nothing to back up`);
    return { url, description, createdDataDir, close: async () => server?.stop() };
  } catch (error) {
    await server?.stop();
    throw error;
  }
}

/** Connects to the server on the port; refuses one that serves another data directory (another home). */
async function checkRunningServerIsOurs(adminUrl: string, dir: string, port: number): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(ignoreError('the connection may already be gone'));
    if (errorCode(error) === '28P01') {
      throw new BackupError(
        `the PostgreSQL on port ${port} refused the home's postgres password: it belongs to another installation (set BOXYARD_DEV_POSTGRES_PORT or the config's database.embedded.port)`,
      );
    }
    if (errorCode(error) === 'ECONNREFUSED') throw error; // nothing listens: the caller starts the server
    throw new BackupError(`cannot connect to PostgreSQL on port ${port}: ${(error as Error).message}`);
  }
  try {
    const served = (await client.query<{ data_directory: string }>('show data_directory')).rows[0]!.data_directory;
    const ours = await realpath(dir).catch(() => dir);
    if ((await realpath(served).catch(() => served)) !== ours) {
      throw new BackupError(
        `the PostgreSQL on port ${port} serves ${served}, not this home's ${dir}: stop it or choose another port (BOXYARD_DEV_POSTGRES_PORT)`,
      );
    }
  } finally {
    await client.end();
  }
}
