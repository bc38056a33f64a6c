// Product processes in the benches run as the `boxyard` launchers run them (Makefile's run, the image's and the host
// install's wrappers): with the V8 flags of services/boxyard/node-flags and glibc's malloc settings beside them, so
// a bench measures what users run. BENCH_NODE_FLAGS (even empty) replaces the flags, to compare before/after one.
import { readNodeFlags } from 'boxyard/src/node-flags.ts';

/** The V8 flags every `boxyard` launcher passes, or BENCH_NODE_FLAGS when set. */
export function launcherNodeFlags(): string[] {
  const override = process.env.BENCH_NODE_FLAGS;
  if (override !== undefined) return override.split(' ').filter(Boolean);
  return readNodeFlags();
}

/**
 * The environment the launchers set beside the flags (see services/boxyard/node-flags for why). Not their compile
 * cache: it serves a restart, and every bench process is a first start.
 */
export const LAUNCHER_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '65536' } as const;
