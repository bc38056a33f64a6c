// A long-running `serve` started by one make target and stopped by another (`make cluster` / `make cluster-down`,
// `make demo` / `make demo-down`): detached in its own process group, its pid in a file, "ready" when it writes
// its ready file, stopped with SIGTERM (then SIGKILL of its group).
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

export interface DetachedFiles {
  /** The script whose `serve` command runs detached (its path is how a live pid is recognised). */
  script: string;
  stateDir: string;
  pidFile: string;
  readyFile: string;
  serveLog: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pid of a running `serve`, if any (a stale pid file, or a pid reused by another program, counts as none). */
export function runningPid(files: DetachedFiles): number | undefined {
  if (!existsSync(files.pidFile)) return undefined;
  const pid = Number(readFileSync(files.pidFile, 'utf8').trim());
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(files.script) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts `node <script> serve` detached; resolves with the ready file's JSON, or fails with the serve log. */
export async function startDetached<T>(files: DetachedFiles, what: string, timeoutMs: number): Promise<T> {
  mkdirSync(files.stateDir, { recursive: true });
  rmSync(files.readyFile, { force: true });
  const fd = openSync(files.serveLog, 'w');
  // Detached: its own process group, no stdio tie to make, so it keeps running after this command returns.
  const child = spawn(process.execPath, [files.script, 'serve'], { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.unref();
  writeFileSync(files.pidFile, `${child.pid}\n`);
  console.log(`starting ${what} (pid ${child.pid}, state in ${files.stateDir}, log ${files.serveLog}) ...`);
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(files.readyFile)) {
    if (exited !== undefined || Date.now() > deadline) {
      if (exited === undefined) process.kill(-child.pid!, 'SIGKILL');
      rmSync(files.pidFile, { force: true });
      throw new Error(
        `${what} did not start (${exited === undefined ? 'timeout' : `exit ${exited}`}); ${files.serveLog}:\n${readFileSync(files.serveLog, 'utf8')}`,
      );
    }
    await sleep(200);
  }
  return JSON.parse(readFileSync(files.readyFile, 'utf8')) as T;
}

/**
 * `up`: says so when a `serve` runs already (showing its ready file again), else starts one and shows what it
 * reported. 0 when it runs, 1 when it could not start (the serve log is printed).
 */
export async function upDetached<T>(files: DetachedFiles, what: string, timeoutMs: number, show: (ready: T, startedNow: boolean) => void): Promise<number> {
  const pid = runningPid(files);
  if (pid) {
    console.log(`${what} is already running (pid ${pid})`);
    if (existsSync(files.readyFile)) show(JSON.parse(readFileSync(files.readyFile, 'utf8')) as T, false);
    return 0;
  }
  try {
    show(await startDetached<T>(files, what, timeoutMs), true);
    return 0;
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
}

/** SIGTERM to a running `serve`; its whole group is killed if it has not stopped after `graceMs`. */
export async function stopDetached(files: DetachedFiles, graceMs: number): Promise<number | undefined> {
  const pid = runningPid(files);
  if (pid) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (runningPid(files) === pid && Date.now() < deadline) await sleep(200);
    if (runningPid(files) === pid) process.kill(-pid, 'SIGKILL');
  }
  rmSync(files.pidFile, { force: true });
  return pid;
}

/** Runs `stop` once on SIGTERM, SIGINT or SIGHUP, then exits. */
export function stopOnSignals(log: (line: string) => void, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    await stop();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));
}

/** `node <script> up|down|serve`: the command line both make targets share. */
export async function runCommand(script: string, commands: { up(): Promise<number>; down(): Promise<number>; serve(): Promise<void> }): Promise<void> {
  const command = process.argv[2];
  if (command === 'up') process.exitCode = await commands.up();
  else if (command === 'down') process.exitCode = await commands.down();
  else if (command === 'serve') await commands.serve();
  else {
    console.error(`usage: node ${script} up|down`);
    process.exitCode = 2;
  }
}
