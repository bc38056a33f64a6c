// Every service in one process: `boxyard dev` (state in ./.boxyard, embedded defaults) and `boxyard serve all`
// (a host install, one config file). PostgreSQL is either external (a URL) or embedded under the home and
// supervised: restarted with backoff when it dies, while the services answer 503 and recover by themselves.
import { mkdir } from 'node:fs/promises';
import { generatePassword } from '@boxyard/kit';
import pg from 'pg';
import { DATABASE_NAME, embeddedPostgresDir, secretStore } from './home.ts';
import { superviseEmbeddedPostgres, type SupervisedPostgres } from './postgres-supervisor.ts';
import { services, type RunningService } from './services.ts';

export type ServiceOverrides = Record<string, unknown>;

/** Where a one-machine Boxyard keeps its state and which PostgreSQL it uses: `boxyard dev`'s or a host config's. */
export interface Installation {
  home: string;
  database: { url: string } | { embedded: { port: number } };
  /** Each service's own config keys, merged over the embedded defaults; `false` leaves the service out. */
  services?: Record<string, ServiceOverrides | false>;
}

export interface RunAllOptions extends Installation {
  /** How the process names itself in its output (`boxyard dev`, `boxyard serve all`). */
  label: string;
}

async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function runAll(options: RunAllOptions): Promise<void> {
  const { home, label } = options;
  await mkdir(home, { recursive: true, mode: 0o755 });
  const secrets = secretStore(home);
  console.log(`${label}: state in ${home}`);

  let postgres: SupervisedPostgres | undefined;
  const running: RunningService[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${label}: stopping ...`);
    await Promise.allSettled(running.map((s) => s.close()));
    await postgres?.stop();
    console.log(`${label}: stopped`);
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));
  try {
    let databaseUrl: string;
    if ('url' in options.database) {
      databaseUrl = options.database.url;
      console.log(`  postgres        ${new URL(databaseUrl).host} (external)`);
    } else {
      const { dir, moved } = await embeddedPostgresDir(home);
      if (moved) console.log(`  (the postgres user cannot reach ${home}; PostgreSQL data kept in ${dir})`);
      postgres = await superviseEmbeddedPostgres({
        dir,
        port: options.database.embedded.port,
        password: await secrets.get('postgres_password'),
        log: (line) => console.log(`${label}: ${line}`),
      });
      console.log(`  postgres        ${postgres.version} on 127.0.0.1:${postgres.port} (embedded, restarted if it dies)`);
      databaseUrl = await ensureDatabase(postgres.adminUrl, DATABASE_NAME);
    }
    // One admin password for every service: BOXYARD_ADMIN_PASSWORD, or generated once and kept with the secrets.
    let adminPassword = process.env.BOXYARD_ADMIN_PASSWORD;
    if (adminPassword) console.log('  admin           user "admin", password from BOXYARD_ADMIN_PASSWORD');
    else {
      adminPassword = await secrets.get('admin_password', generatePassword);
      console.log(
        secrets.generatedNow('admin_password')
          ? `  admin           user "admin", password ${adminPassword} (generated now, shown once; kept in ${secrets.file})`
          : `  admin           user "admin", password kept in ${secrets.file} (admin_password)`,
      );
    }
    for (const service of services) {
      const overrides = options.services?.[service.name];
      if (overrides === false) continue;
      const started = await service.dev({ home, databaseUrl, secret: (name) => secrets.get(name), adminPassword, overrides: overrides ?? {} });
      running.push(started);
      console.log(`  ${service.name.padEnd(15)} ${started.url}`);
    }
  } catch (error) {
    console.error(`${label}: ${(error as Error).message}`);
    await stop(1);
    return;
  }
  console.log('Ready. Press Ctrl-C to stop.');
}
