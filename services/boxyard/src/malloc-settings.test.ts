// What the launchers' malloc settings are for (services/boxyard/node-flags; issue 35, RSS after loads back to back):
// a Node process under them gives back the memory of 64 KiB read blocks once they are garbage, even when small
// blocks allocated between them stay in use (as a load's sockets, parsers and pools do). A child takes the settings
// as `make run` passes them, allocates 128 MiB of such blocks with a small survivor after each, drops the blocks,
// collects, and reports its RSS; glibc's default threshold keeps the blocks in its arena (the same child with
// MALLOC_MMAP_THRESHOLD_=131072 is the control, and must keep them, so the test can fail).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const MiB = 1024 * 1024;

/** The malloc settings `make run` starts Node with (the other launchers' equality: launchers.test.ts). */
async function makeRunMallocEnv(): Promise<Record<string, string>> {
  const { stdout } = await run('make', ['-s', '-n', 'run'], { cwd: root });
  const words = stdout.trim().split('\n').at(-1)!.split(' ');
  return Object.fromEntries(words.filter((word) => word.startsWith('MALLOC_')).map((word) => word.split('=') as [string, string]));
}

// Anonymous RSS only: the pages of Node's own binary it touches on the way are file-backed and not the point.
const child = `
  const anon = () => Number(/^RssAnon:\\s+(\\d+) kB/m.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
  const before = anon();
  let blocks = [];
  const kept = [];
  for (let i = 0; i < 2048; i++) {
    blocks.push(Buffer.allocUnsafeSlow(65536).fill(i));
    kept.push(Buffer.allocUnsafeSlow(512).fill(i));
  }
  const peak = anon();
  blocks = undefined;
  globalThis.gc();
  globalThis.gc();
  // V8 frees the blocks' memory on its own threads after the collection.
  setTimeout(() => console.log(JSON.stringify({ before, peak, after: anon(), kept: kept.length })), 1000);`;

async function grownAndKept(env: Record<string, string>): Promise<{ grown: number; kept: number }> {
  const { stdout } = await run(process.execPath, ['--expose-gc', '-e', child], { env: { PATH: process.env.PATH!, ...env } });
  const { before, peak, after } = JSON.parse(stdout) as { before: number; peak: number; after: number };
  return { grown: peak - before, kept: after - before };
}

it("make run's malloc settings give the memory of freed 64 KiB blocks back, with small blocks still in use between them", async () => {
  const env = await makeRunMallocEnv();
  expect(Object.keys(env).sort()).toEqual(['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']);
  const launched = await grownAndKept(env);
  expect(launched.grown).toBeGreaterThan(120 * MiB);
  // Measured: 18–30% stays (the survivors and what V8 and Node keep per Buffer), against all of it in the control.
  expect(launched.kept).toBeLessThan(0.4 * launched.grown);
  // The control: the same blocks from glibc's arena stay there (its top is pinned by the small blocks).
  const control = await grownAndKept({ ...env, MALLOC_MMAP_THRESHOLD_: '131072' });
  expect(control.kept).toBeGreaterThan(0.8 * control.grown);
});
