// Product processes in the benches run as the `boxyard` launchers run them (Makefile's run, the image's and the host
// install's wrappers): with the V8 flags of services/boxyard/node-flags and glibc's malloc settings beside them, so
// a bench measures what users run. BENCH_NODE_FLAGS (even empty) replaces the flags, to compare before/after one.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const nodeFlagsFile = fileURLToPath(new URL('../../services/boxyard/node-flags', import.meta.url));

/** The V8 flags every `boxyard` launcher passes, or BENCH_NODE_FLAGS when set. */
export function launcherNodeFlags(): string[] {
  const override = process.env.BENCH_NODE_FLAGS;
  if (override !== undefined) return override.split(' ').filter(Boolean);
  return readFileSync(nodeFlagsFile, 'utf8').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
}

/** The environment the launchers set beside the flags (see services/boxyard/node-flags for why). */
export const LAUNCHER_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' } as const;
