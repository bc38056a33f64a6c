// `boxyard dev` as a real child process for tests: a temporary home PostgreSQL (running as `postgres` when we are
// root) can reach, a free port for its embedded PostgreSQL, every service on a free port (BOXYARD_SERVER__PORT=0),
// and the URLs it prints.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './ports.ts';

const MAIN = new URL('../../services/boxyard/src/main.ts', import.meta.url).pathname;

export interface DevProcess {
  /** The `boxyard dev` process itself. */
  pid: number;
  /** Settles when it has exited: its exit code, or null when a signal ended it. */
  exited: Promise<number | null>;
  home: string;
  postgresPort: number;
  /** Each service's public URL, by service name. */
  urls: Record<string, string>;
  /** Each service's /metrics listener (`…/metrics`), by service name. */
  metricsUrls: Record<string, string>;
  /** Everything it printed so far (stdout and stderr; JSON log lines included). */
  output(): string;
  /** URL of the `boxyard` database as the superuser (password from the home's secrets). */
  databaseUrl(): Promise<string>;
  /** The embedded PostgreSQL's current postmaster pid (postmaster.pid in its data directory). */
  postgresPid(): Promise<number>;
  /** SIGTERM and wait; `discard` also removes the home. */
  stop(options?: { discard?: boolean }): Promise<void>;
}

/** A fresh home under /var/tmp that the `postgres` user can traverse. */
export async function makeHome(prefix = 'boxyard-dev-'): Promise<string> {
  const home = await mkdtemp(join('/var/tmp', prefix));
  await chmod(home, 0o755);
  return home;
}

export interface DevProcessOptions {
  home?: string;
  postgresPort?: number;
  env?: Record<string, string>;
  /** A process group of its own, as a shell gives a foreground job: a test can signal the whole group (Ctrl-C). */
  ownProcessGroup?: boolean;
  /** How to run it (e.g. as another user): the command and arguments for `node <main> dev`; default exactly that. */
  launcher?: (node: string, main: string) => { command: string; args: string[] };
  /** The environment instead of this process's (the options' `env` and the dev settings still go on top). */
  baseEnv?: Record<string, string | undefined>;
}

export async function startDevProcess(options: DevProcessOptions = {}): Promise<DevProcess> {
  const home = options.home ?? (await makeHome());
  const postgresPort = options.postgresPort ?? (await freePort());
  let text = '';
  const launch = options.launcher?.(process.execPath, MAIN) ?? { command: process.execPath, args: [MAIN] };
  const child: ChildProcess = spawn(launch.command, [...launch.args, 'dev'], {
    env: {
      ...(options.baseEnv ?? process.env),
      BOXYARD_HOME: home,
      BOXYARD_DEV_POSTGRES_PORT: String(postgresPort),
      BOXYARD_SERVER__PORT: '0',
      BOXYARD_LOGGING__LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownProcessGroup ?? false,
  });
  child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  // A test that times out while it starts never reaches its stop(): end it (and so its PostgreSQL) with the worker.
  const stopWithWorker = () => child.kill('SIGTERM');
  process.once('exit', stopWithWorker);
  void exited.then(() => process.removeListener('exit', stopWithWorker));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`boxyard dev did not get ready in 90 s:\n${text.slice(-3000)}`)), 90_000);
    const check = () => {
      if (text.includes('Ready. Press Ctrl-C')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`boxyard dev exited (${code}) before it was ready:\n${text.slice(-3000)}`));
    });
  });
  // `boxyard dev` prints each service's public URL, and its metrics listener as `<service>-metrics`.
  const printed = [...text.matchAll(/^ {2}([a-z-]+) +(https?:\/\/\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
  const urls = Object.fromEntries(printed.filter(([name]) => !name.endsWith('-metrics')));
  const metricsUrls = Object.fromEntries(printed.filter(([name]) => name.endsWith('-metrics')).map(([name, url]) => [name.slice(0, -'-metrics'.length), url]));
  const secrets = async () => JSON.parse(await readFile(join(home, 'secrets.json'), 'utf8')) as Record<string, string>;
  return {
    pid: child.pid!,
    exited,
    home,
    postgresPort,
    urls,
    metricsUrls,
    output: () => text,
    databaseUrl: async () => `postgres://postgres:${encodeURIComponent((await secrets()).postgres_password!)}@127.0.0.1:${postgresPort}/boxyard`,
    postgresPid: async () => Number((await readFile(join(home, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]),
    async stop(stopOptions = {}) {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      if (stopOptions.discard) await rm(home, { recursive: true, force: true });
    },
  };
}
