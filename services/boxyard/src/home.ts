// The state directory of a one-machine Boxyard ($BOXYARD_HOME, default ./.boxyard; /var/lib/boxyard under systemd):
// the generated secrets, the embedded PostgreSQL's data and each service's local storage.
import { createHash, randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { postgresCanReach } from './embedded-postgres.ts';

export const DEFAULT_EMBEDDED_POSTGRES_PORT = 15432;
/** The database every service shares (a schema each). */
export const DATABASE_NAME = 'boxyard';

export const resolveHome = (home = process.env.BOXYARD_HOME ?? '.boxyard') => resolve(home);
export const secretsFile = (home: string) => join(home, 'secrets.json');
/** Local storage of one service. */
export const storageRoot = (home: string, service: string) => join(home, service);

export interface SecretStore {
  file: string;
  /** A named secret: generated (and kept) the first time it is asked for, the same value on every later start. */
  get(name: string, generate?: () => string): Promise<string>;
  /** Whether `get` generated this secret during this run (so it is printed once, never again). */
  generatedNow(name: string): boolean;
  /** Every secret, for a backup. */
  all(): Promise<Record<string, string>>;
}

/** Secrets in one 0600 file, written atomically (temporary file + rename). */
export function secretStore(home: string): SecretStore {
  const file = secretsFile(home);
  let cache: Promise<Record<string, string>> | undefined;
  const generated = new Set<string>();
  const load = () =>
    (cache ??= readFile(file, 'utf8').then(
      (t) => JSON.parse(t) as Record<string, string>,
      (): Record<string, string> => ({}),
    ));
  let writing = Promise.resolve();
  return {
    file,
    async get(name, generate = () => randomBytes(32).toString('base64url')) {
      const secrets = await load();
      if (!secrets[name]) {
        secrets[name] = generate();
        generated.add(name);
        const text = `${JSON.stringify(secrets, null, 2)}\n`;
        writing = writing.then(async () => {
          const staging = `${file}.${process.pid}.tmp`;
          await writeFile(staging, text, { mode: 0o600 });
          await rename(staging, file);
        });
        await writing;
      }
      return secrets[name]!;
    },
    generatedNow: (name) => generated.has(name),
    all: async () => ({ ...(await load()) }),
  };
}

/**
 * The embedded PostgreSQL's data directory. As root, PostgreSQL runs as `postgres`, which cannot enter a 0700
 * checkout: its data then lives in /var/lib/boxyard, keyed by the home's path.
 */
export async function embeddedPostgresDir(home: string): Promise<{ dir: string; moved: boolean }> {
  const dir = join(home, 'postgres');
  if (await postgresCanReach(dir)) return { dir, moved: false };
  return { dir: join('/var/lib/boxyard', `postgres-${createHash('sha256').update(home).digest('hex').slice(0, 12)}`), moved: true };
}

/**
 * The URL of the `boxyard` database on an embedded server (`adminUrl`: its superuser URL): created when missing and
 * `create` is set, else undefined when missing.
 */
export async function installationDatabase(adminUrl: string, options: { create: boolean }): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = (await client.query('select 1 from pg_database where datname = $1', [DATABASE_NAME])).rowCount === 1;
    if (!exists) {
      if (!options.create) return undefined;
      await client.query(`create database ${pg.escapeIdentifier(DATABASE_NAME)}`);
    }
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${DATABASE_NAME}`;
  return url.toString();
}
