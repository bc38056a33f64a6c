// `boxyard dev` runs exactly one PostgreSQL on its data directory, its own, and never leaves it behind (issue 27):
// - PostgreSQL killed, then killed again while it starts once more: both deaths are noticed (not the second only
//   when a 60 s start-up wait runs out) and the services answer again;
// - the product killed with SIGKILL: its PostgreSQL goes too, and the next start on the same home is clean;
// - a PostgreSQL left running on the data directory by a run that could not take it along: stopped before the
//   product starts its own (not answered for it while the product restarts its own that cannot start, in a loop);
// - SIGTERM, also followed by a second one, or arriving while PostgreSQL restarts: PostgreSQL is stopped and
//   waited for before the product exits.
// Real processes throughout: `boxyard dev` (test/harness/dev-process.ts) and the real embedded PostgreSQL.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startDevProcess, type DevProcess } from '../harness/dev-process.ts';

const ADMIN_PASSWORD = 'Supervised-Admin-Passw0rd';
const env = { BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Live processes working in `dir` (PostgreSQL's postmaster and every backend chdir to the data directory). */
function processesOn(dir: string): number[] {
  const real = realpathSync(dir);
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === real;
      } catch {
        return false; // gone, or a zombie
      }
    })
    .map(Number);
}

/** The parent process id (field 4 of /proc/<pid>/stat, after the command name in parentheses); undefined once gone. */
const parentOf = (pid: number): number | undefined => {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  } catch {
    return undefined;
  }
};

/** Running: not gone, and not a zombie waiting for whoever adopted it to reap it. */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
};

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still not: ${what}`);
    await sleep(50);
  }
}

const postmasterPid = (dataDir: string): number | undefined => {
  try {
    return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
};

/** The next postmaster on `dataDir` (other than `previous`), as soon as it has written its pid file: still starting. */
async function nextPostmaster(dataDir: string, previous: number): Promise<number> {
  let next: number | undefined;
  await until('a new postmaster', () => {
    next = postmasterPid(dataDir);
    return next !== undefined && next !== previous && alive(next);
  });
  return next!;
}

async function waitUntilReady(dev: DevProcess, timeoutMs = 120_000): Promise<void> {
  for (const url of Object.values(dev.urls)) {
    const ready = url.startsWith('https:') ? undefined : `${url}/health/ready`;
    if (ready)
      await until(
        `${ready} answers 200`,
        () =>
          fetch(ready).then(
            (r) => r.status === 200,
            () => false,
          ),
        timeoutMs,
      );
  }
}

/** The postmaster on the data directory is the product's own child, and nothing else of PostgreSQL runs there. */
function expectOwnPostgres(dev: DevProcess, dataDir: string): number {
  const postmaster = postmasterPid(dataDir)!;
  expect(parentOf(postmaster), `postmaster ${postmaster}'s parent`).toBe(dev.pid);
  for (const pid of processesOn(dataDir)) {
    const parent = parentOf(pid);
    // A backend that ended between the listing and this read (a finished connection) has no parent to check.
    if (pid !== postmaster && parent !== undefined) expect(parent, `PostgreSQL process ${pid}'s parent`).toBe(postmaster);
  }
  return postmaster;
}

describe('boxyard dev keeps exactly one PostgreSQL, its own', () => {
  let dev: DevProcess;
  let dataDir: string;
  const restart = async (options: { ownProcessGroup?: boolean } = {}) => {
    dev = await startDevProcess({ home: dev.home, postgresPort: dev.postgresPort, env, ...options });
  };

  beforeAll(async () => {
    dev = await startDevProcess({ env });
    dataDir = join(dev.home, 'postgres');
  });

  // Each test starts from a running product with nothing else on the data directory, whatever the last one left.
  beforeEach(async () => {
    const postmaster = postmasterPid(dataDir);
    const healthy =
      alive(dev.pid) &&
      postmaster !== undefined &&
      processesOn(dataDir).every((pid) => (pid === postmaster ? parentOf(pid) === dev.pid : parentOf(pid) === postmaster));
    if (healthy) return;
    await dev.stop();
    for (const pid of processesOn(dataDir)) process.kill(pid, 'SIGKILL');
    await until('nothing left on the data directory', () => processesOn(dataDir).length === 0);
    await restart();
  }, 180_000);

  afterAll(async () => {
    await dev?.stop();
    // Whatever a failed test left behind on the data directory must not outlive it.
    if (dataDir) for (const pid of processesOn(dataDir)) process.kill(pid, 'SIGKILL');
    await dev?.stop({ discard: true });
  });

  it('notices PostgreSQL killed again while it restarts, and the services answer again', async () => {
    const first = await dev.postgresPid();
    process.kill(first, 'SIGKILL');
    // The supervisor's new postmaster, killed as soon as it exists: in the middle of its start (crash recovery).
    const second = await nextPostmaster(dataDir, first);
    process.kill(second, 'SIGKILL');

    await waitUntilReady(dev);
    await until('the second death is reported', () => dev.output().includes(`PostgreSQL (pid ${second}) exited`), 120_000);
    expect(dev.output()).toContain(`PostgreSQL (pid ${first}) exited`);
    const third = expectOwnPostgres(dev, dataDir);
    expect([first, second]).not.toContain(third);
  }, 300_000);

  it('takes its PostgreSQL along when it is killed with SIGKILL; the next start on the same home is clean', async () => {
    const postmaster = await dev.postgresPid();
    process.kill(dev.pid, 'SIGKILL');
    await dev.exited;
    await until(`no PostgreSQL process left on the data directory (postmaster ${postmaster})`, () => processesOn(dataDir).length === 0);

    await restart();
    await waitUntilReady(dev);
    expectOwnPostgres(dev, dataDir);
    expect(dev.output()).not.toMatch(/PostgreSQL \(pid \d+\) exited|PostgreSQL restarted/);
  }, 300_000);

  it('stops a PostgreSQL left running on its data directory before it starts its own', async () => {
    // A postmaster as a product that could not take it along leaves it: same binary, flags and account, its
    // parent gone (the shell that started it in the background exits at once).
    const own = await dev.postgresPid();
    const binary = readlinkSync(`/proc/${own}/exe`);
    const flags = readFileSync(`/proc/${own}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1);
    const { uid, gid } = statSync(dataDir);
    await dev.stop();
    expect(processesOn(dataDir)).toEqual([]);
    spawn('sh', ['-c', '"$@" </dev/null >/dev/null 2>&1 &', 'sh', binary, ...flags], { uid, gid, stdio: 'ignore', cwd: '/' });
    let leftover = 0;
    await until('the leftover postmaster accepts connections', () => {
      leftover = postmasterPid(dataDir) ?? 0;
      return leftover !== 0 && alive(leftover) && (readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[7] ?? '').trim() === 'ready';
    });
    expect(parentOf(leftover)).not.toBe(process.pid);

    await restart();
    expect(alive(leftover)).toBe(false);
    expect(dev.output()).toContain(`PostgreSQL (pid ${leftover}) was left running on ${dataDir} by an earlier run: stopping it`);
    await waitUntilReady(dev);
    expectOwnPostgres(dev, dataDir);
    expect(dev.output()).not.toMatch(/PostgreSQL \(pid \d+\) exited|PostgreSQL restarted/);
  }, 300_000);

  /** The product exited 0 and left no PostgreSQL process and no lock file (a postmaster that shut down removes it). */
  async function expectCleanExit(): Promise<void> {
    const code = await dev.exited;
    expect(processesOn(dataDir), 'PostgreSQL processes left when the product exited').toEqual([]);
    expect(existsSync(join(dataDir, 'postmaster.pid')), 'postmaster.pid left behind').toBe(false);
    expect(code).toBe(0);
  }

  it('stops PostgreSQL and waits for it on SIGTERM, also when a second signal follows at once', async () => {
    // An impatient stop: a second SIGTERM while the first is being handled (Ctrl-C twice, a service manager's retry).
    process.kill(dev.pid, 'SIGTERM');
    await until('stopping', () => dev.output().includes('boxyard dev: stopping'));
    process.kill(dev.pid, 'SIGTERM');
    await expectCleanExit();
  }, 300_000);

  it('stops PostgreSQL and waits for it on SIGTERM while it is restarting PostgreSQL', async () => {
    const first = await dev.postgresPid();
    process.kill(first, 'SIGKILL');
    await nextPostmaster(dataDir, first);
    process.kill(dev.pid, 'SIGTERM');
    await expectCleanExit();
  }, 300_000);

  it('on Ctrl-C in a terminal (SIGINT to the whole foreground process group) stops the services first, then PostgreSQL', async () => {
    await dev.stop();
    await restart({ ownProcessGroup: true });
    const before = dev.output().length;
    process.kill(-dev.pid, 'SIGINT');
    const code = await dev.exited;
    expect(processesOn(dataDir), 'PostgreSQL processes left when the product exited').toEqual([]);
    expect(existsSync(join(dataDir, 'postmaster.pid')), 'postmaster.pid left behind').toBe(false);
    expect(code).toBe(0);
    // PostgreSQL did not get the Ctrl-C itself: it went down after the services, none of them lost a connection.
    const stopping = dev.output().slice(before);
    expect(stopping).toMatch(/boxyard dev: stopping[^]*boxyard dev: stopped/);
    expect(stopping).not.toMatch(/terminating connection|connection lost|PostgreSQL \(pid \d+\) exited/);
  }, 300_000);
});
