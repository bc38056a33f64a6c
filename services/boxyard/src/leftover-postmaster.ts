// A PostgreSQL left running on our data directory by an earlier run that could not take it along (killed with
// SIGKILL where the parent-death signal was not available, or a version without it). Left alone, it answers on
// our port while the server we start refuses the locked data directory and exits at once: the supervisor would
// "restart" it forever while the services talk to the unsupervised one. So it is stopped before we start ours,
// cleanly (fast shutdown, then harder), unless a running boxyard still owns it: then starting is refused.
import { readdir, readFile, readlink, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { ignoreError } from '@boxyard/kit';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long a leftover gets for a fast shutdown (a checkpoint), then for an immediate one, before SIGKILL. */
const GRACE_MS = { fast: 30_000, immediate: 5_000 };

/** Whether `pid` is still a running process working in `dir` (a zombie or a recycled pid is not). */
async function runsIn(pid: number, dir: string): Promise<boolean> {
  try {
    return (await readlink(`/proc/${pid}/cwd`)) === dir;
  } catch {
    return false;
  }
}

/** The first value of a line of /proc/<pid>/status (`PPid`, `Uid`: the real one). */
const statusField = async (pid: number, field: string) =>
  (await readFile(`/proc/${pid}/status`, 'utf8'))
    .split('\n')
    .find((line) => line.startsWith(`${field}:`))
    ?.split(/\s+/)[1];

/** Processes still working in `dir`: a postmaster's backends outlive a SIGKILL of it for a moment. */
async function anyIn(dir: string): Promise<boolean> {
  for (const name of await readdir('/proc')) if (/^\d+$/.test(name) && (await runsIn(Number(name), dir))) return true;
  return false;
}

/** The running `boxyard` that `pid` is a child of, if any: every launcher runs services/boxyard/src/main.ts. */
async function owningBoxyard(pid: number): Promise<number | undefined> {
  try {
    const parent = Number(await statusField(pid, 'PPid'));
    if (parent <= 1 || parent === process.pid) return undefined;
    const command = (await readFile(`/proc/${parent}/cmdline`, 'utf8')).split('\0');
    return command.some((arg) => arg.endsWith(join('boxyard', 'src', 'main.ts'))) ? parent : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops the postmaster named by `dir`/postmaster.pid when it is alive, runs as `uid` and works in `dir`; nothing
 * else is touched (a stale file whose pid is gone or now someone else's is PostgreSQL's own business).
 */
export async function stopLeftoverPostmaster(dir: string, uid: number, log: (message: string) => void): Promise<void> {
  let pid: number;
  let real: string;
  try {
    pid = Number((await readFile(join(dir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    real = await realpath(dir);
  } catch {
    return; // no lock file: nothing runs there
  }
  if (!Number.isInteger(pid) || pid <= 1 || !(await runsIn(pid, real))) return;
  if (Number(await statusField(pid, 'Uid').catch(ignoreError('a process that ended meanwhile is not ours to stop'))) !== uid) return;
  const owner = await owningBoxyard(pid);
  if (owner !== undefined) throw new Error(`PostgreSQL (pid ${pid}) on ${dir} belongs to another running boxyard (pid ${owner}): stop that one first`);

  log(`PostgreSQL (pid ${pid}) was left running on ${dir} by an earlier run: stopping it before starting ours`);
  // SIGINT: fast shutdown (clients cut, checkpoint); SIGQUIT: immediate (crash recovery at our start); SIGKILL.
  for (const [signal, graceMs] of [
    ['SIGINT', GRACE_MS.fast],
    ['SIGQUIT', GRACE_MS.immediate],
    ['SIGKILL', GRACE_MS.immediate],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return; // gone meanwhile
    }
    // Not our child: no exit event to wait for, so look (this runs once, at start-up).
    for (const deadline = Date.now() + graceMs; Date.now() < deadline; await sleep(100)) {
      if (await runsIn(pid, real)) continue;
      for (const until = Date.now() + GRACE_MS.immediate; Date.now() < until && (await anyIn(real)); ) await sleep(100);
      return;
    }
  }
  throw new Error(`PostgreSQL (pid ${pid}) left running on ${dir} did not stop`);
}
