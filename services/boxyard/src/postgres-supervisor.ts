// The embedded PostgreSQL of a one-machine Boxyard, kept alive: when the server dies (killed, out of memory, a
// crash) it is started again on the same port and data directory with exponential backoff, so the services'
// pools reconnect to the same URL by themselves. PostgreSQL's own crash recovery replays the WAL on that start.
// A server that dies while it is being started again is noticed at once (its exit ends the start), the server
// stops when this process ends however it ends (parent-death signal), and stop() also ends a start under way.
import { startPostgres, type RunningPostgres } from './embedded-postgres.ts';

export interface SupervisedPostgres {
  adminUrl: string;
  port: number;
  version: string;
  /** The current server's process id (changes on every restart). */
  pid(): number;
  /** How many times the server was restarted after dying. */
  restarts(): number;
  stop(): Promise<void>;
}

export interface SuperviseOptions {
  dir: string;
  port: number;
  password: string;
  log: (message: string) => void;
  /** First and longest wait between restart attempts. */
  backoff?: { initialMs: number; maxMs: number };
  /** Gives up the first start (the product is stopping before it was ready). */
  signal?: AbortSignal;
}

/** A server that stayed up this long resets the backoff: the next death is a new incident, not a crash loop. */
const STABLE_AFTER_MS = 60_000;

export async function superviseEmbeddedPostgres(options: SuperviseOptions): Promise<SupervisedPostgres> {
  const backoff = options.backoff ?? { initialMs: 500, maxMs: 30_000 };
  const start = (signal: AbortSignal | undefined) =>
    startPostgres({ dir: options.dir, port: options.port, persistent: true, password: options.password, dieWithParent: true, signal, notice: options.log });
  let current: RunningPostgres = await start(options.signal);
  /** Gives up a restart under way when stop() is called. */
  const stopped = new AbortController();
  let stopping = false;
  let restarts = 0;
  let delay = backoff.initialMs;
  let timer: NodeJS.Timeout | undefined;
  let restarting: Promise<void> | undefined;

  const watch = (server: RunningPostgres) => {
    const startedAt = Date.now();
    void server.exited.then((code) => {
      if (stopping || server !== current) return;
      if (Date.now() - startedAt > STABLE_AFTER_MS) delay = backoff.initialMs;
      options.log(`PostgreSQL (pid ${server.pid}) exited (${code ?? 'killed'}); restarting in ${delay} ms`);
      scheduleRestart();
    });
  };

  /** Waits `delay`, then tries once; every attempt doubles the next wait (reset once a server stays up). */
  const scheduleRestart = () => {
    const wait = delay;
    delay = Math.min(delay * 2, backoff.maxMs);
    timer = setTimeout(() => {
      timer = undefined;
      if (stopping) return;
      restarting = start(stopped.signal)
        .then(
          (server) => {
            current = server; // stop() stops it when it came up just as stopping began
            if (stopping) return;
            restarts++;
            options.log(`PostgreSQL restarted (pid ${server.pid}); services reconnect by themselves`);
            watch(server);
          },
          (error: unknown) => {
            if (stopping) return;
            options.log(`PostgreSQL did not start again (${(error as Error).message.split('\n')[0]}); next attempt in ${delay} ms`);
            scheduleRestart();
          },
        )
        .finally(() => (restarting = undefined));
    }, wait);
  };

  watch(current);
  return {
    adminUrl: current.adminUrl,
    port: current.port,
    version: current.version,
    pid: () => current.pid,
    restarts: () => restarts,
    stop: async () => {
      stopping = true;
      if (timer) clearTimeout(timer);
      stopped.abort();
      await restarting;
      await current.stop();
    },
  };
}
