// `boxyard dev`: the product on one machine. An embedded PostgreSQL and every service on loopback, state under
// $BOXYARD_HOME (default ./.boxyard) so data survives restarts; secrets generated on first start, never shipped.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { generatePassword } from '@boxyard/kit';
import pg from 'pg';
import { postgresCanReach, startPostgres } from './embedded-postgres.ts';
import { services, type RunningService } from './services.ts';

const DEFAULT_DEV_POSTGRES_PORT = 15432;

/** Secrets in one 0600 file: generated when first asked for, the same on every later start. */
function secretStore(home: string) {
  const file = join(home, 'secrets.json');
  let cache: Promise<Record<string, string>> | undefined;
  const load = () => (cache ??= readFile(file, 'utf8').then((t) => JSON.parse(t) as Record<string, string>, (): Record<string, string> => ({})));
  let writing = Promise.resolve();
  return async (name: string, generate = () => randomBytes(32).toString('base64url')): Promise<string> => {
    const secrets = await load();
    if (!secrets[name]) {
      secrets[name] = generate();
      writing = writing.then(() => writeFile(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 }));
      await writing;
    }
    return secrets[name]!;
  };
}

async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dev(): Promise<void> {
  const home = resolve(process.env.BOXYARD_HOME ?? '.boxyard');
  await mkdir(home, { recursive: true, mode: 0o755 });
  const secret = secretStore(home);
  const port = Number(process.env.BOXYARD_DEV_POSTGRES_PORT ?? DEFAULT_DEV_POSTGRES_PORT);
  console.log(`boxyard dev: state in ${home}`);
  // As root, PostgreSQL runs as `postgres`, which cannot enter a 0700 checkout: keep its data in /var/lib then.
  let pgDir = join(home, 'postgres');
  if (!(await postgresCanReach(pgDir))) {
    pgDir = join('/var/lib/boxyard', `postgres-${createHash('sha256').update(home).digest('hex').slice(0, 12)}`);
    console.log(`  (the postgres user cannot reach ${home}; PostgreSQL data kept in ${pgDir})`);
  }
  const postgres = await startPostgres({ dir: pgDir, port, persistent: true, password: await secret('postgres_password') });
  console.log(`  postgres        ${postgres.version} on 127.0.0.1:${postgres.port} (embedded)`);

  const running: RunningService[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log('\nboxyard dev: stopping ...');
    await Promise.allSettled(running.map((s) => s.close()));
    await postgres.stop();
    console.log('boxyard dev: stopped');
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));
  try {
    const databaseUrl = await ensureDatabase(postgres.adminUrl, 'boxyard');
    // One admin password for every service: BOXYARD_ADMIN_PASSWORD, or generated once and kept with the secrets.
    const adminPassword = process.env.BOXYARD_ADMIN_PASSWORD || (await secret('admin_password', generatePassword));
    if (!process.env.BOXYARD_ADMIN_PASSWORD) console.log(`  admin           user "admin", password ${adminPassword} (kept in ${join(home, 'secrets.json')})`);
    for (const service of services) {
      const started = await service.dev({ home, databaseUrl, secret, adminPassword });
      running.push(started);
      console.log(`  ${service.name.padEnd(15)} ${started.url}`);
    }
  } catch (error) {
    console.error(`boxyard dev: ${(error as Error).message}`);
    await stop(1);
    return;
  }
  console.log('Ready. Press Ctrl-C to stop.');
}
