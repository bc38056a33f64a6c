// Every service in one process: `boxyard dev` (state in ./.boxyard, embedded defaults) and `boxyard serve all`
// (a host install, one config file). PostgreSQL is either external (a URL) or embedded under the home and
// supervised: restarted with backoff when it dies, while the services answer 503 and recover by themselves.
import { chmod, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, generatePassword, ignoreError } from '@boxyard/kit';
import { releaseMemoryWhenIdle } from './idle-memory.ts';
import { embeddedPostgresDir, installationDatabase, secretStore } from './home.ts';
import { superviseEmbeddedPostgres, type SupervisedPostgres } from './postgres-supervisor.ts';
import { services, type RunningService, type ServiceDefinition } from './services.ts';

/** How long the services get at a stop to finish what they are doing before PostgreSQL is stopped under them. */
const SERVICES_CLOSE_MS = 10_000;

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

/** The services to start, each with its own keys from the installation (`false` leaves a service out). */
const chosenServices = (options: Installation) =>
  services.flatMap((service) => {
    const overrides = options.services?.[service.name];
    return overrides === false ? [] : [{ service, overrides: overrides ?? {} }];
  });

/**
 * Every chosen service's config, checked before anything starts: a typo in the file stops start-up at once with
 * the key's full path (`services.terminal.server.port`), not after PostgreSQL and the services before it started.
 * Placeholders stand for what only exists later (the database URL, generated secrets), so no secret is written.
 */
export async function checkServiceConfigs(options: Installation): Promise<void> {
  const problems: string[] = [];
  for (const { service, overrides } of chosenServices(options)) {
    const context = {
      home: options.home,
      databaseUrl: 'postgres://check@127.0.0.1/boxyard',
      secret: async () => 'x'.repeat(43),
      adminPassword: undefined,
      overrides,
    };
    await service.devConfig(context).catch((error: unknown) => {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(prefixKeys(error.message, service));
    });
  }
  if (problems.length) throw new ConfigError(problems.join('\n'));
}

/** `config: server.port: …` of one service becomes `config: services.<name>.server.port: …`. */
const prefixKeys = (message: string, service: ServiceDefinition) =>
  message.replace(/^config: (\(root\)|\S+?):/gm, (_, key: string) => `config: services.${service.name}${key === '(root)' ? '' : `.${key}`}:`);

/**
 * Nobody but the server reads its state: the terminal's shells run on this host (as other OS accounts when the
 * server is root). The home stays traversable (0711) for the `postgres` user when PostgreSQL's data lives in it;
 * everything in it but that data directory (PostgreSQL keeps it 0700 itself) becomes private to its owner.
 */
export async function protectHome(home: string): Promise<void> {
  await chmod(home, (process.getuid?.() ?? 0) === 0 ? 0o711 : 0o700);
  for (const entry of await readdir(home, { withFileTypes: true })) {
    if (entry.name === 'postgres' || entry.isSymbolicLink()) continue;
    const path = join(home, entry.name);
    const { mode } = await stat(path);
    if ((mode & 0o077) !== 0) await chmod(path, mode & 0o700);
  }
}

export async function runAll(options: RunAllOptions): Promise<void> {
  const { home, label } = options;
  await mkdir(home, { recursive: true, mode: 0o755 });
  // A config mistake is the user's (exit 2 through the caller), not a failure to start.
  await checkServiceConfigs(options);
  const secrets = secretStore(home);
  console.log(`${label}: state in ${home}`);

  let postgres: Promise<SupervisedPostgres> | undefined;
  const running: RunningService[] = [];
  const startingUp = new AbortController();
  let stopping = false;
  let hurry = () => {};
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${label}: stopping ...`);
    startingUp.abort();
    // Services finish what they are doing, for a while; a second signal cuts that short. PostgreSQL is stopped
    // and waited for either way: this process never exits leaving it running.
    await new Promise<void>((resolve) => {
      hurry = resolve;
      setTimeout(resolve, SERVICES_CLOSE_MS).unref();
      void Promise.allSettled(running.map((s) => s.close())).then(() => resolve());
    });
    await (await postgres?.catch(ignoreError('a PostgreSQL that failed to start has nothing to stop; its error was reported')))?.stop();
    console.log(`${label}: stopped`);
    process.exit(code);
  };
  const onSignal = () => {
    if (!stopping) return void stop(0);
    console.log(`${label}: still stopping: PostgreSQL is stopped before this process exits`);
    hurry();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    let databaseUrl: string;
    if ('url' in options.database) {
      databaseUrl = options.database.url;
      console.log(`  postgres        ${new URL(databaseUrl).host} (external)`);
    } else {
      const { dir, moved } = await embeddedPostgresDir(home);
      if (moved) console.log(`  (the postgres user cannot reach ${home}; PostgreSQL data kept in ${dir})`);
      postgres = superviseEmbeddedPostgres({
        dir,
        port: options.database.embedded.port,
        password: await secrets.get('postgres_password'),
        log: (line) => console.log(`${label}: ${line}`),
        signal: startingUp.signal,
      });
      const { version, port, adminUrl } = await postgres;
      console.log(`  postgres        ${version} on 127.0.0.1:${port} (embedded, restarted if it dies)`);
      databaseUrl = (await installationDatabase(adminUrl, { create: true }))!;
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
    for (const { service, overrides } of chosenServices(options)) {
      const started = await service.dev({ home, databaseUrl, secret: (name) => secrets.get(name), adminPassword, overrides });
      running.push(started);
      console.log(`  ${service.name.padEnd(15)} ${started.url}`);
      if (started.metricsUrl) console.log(`  ${`${service.name}-metrics`.padEnd(15)} ${started.metricsUrl}`);
    }
    await protectHome(home);
  } catch (error) {
    if (!stopping) console.error(`${label}: ${(error as Error).message}`); // else: a start given up by stop()
    await stop(1);
    return;
  }
  console.log('Ready. Press Ctrl-C to stop.');
  releaseMemoryWhenIdle();
}
