// Gives memory back once the one-process product goes idle after a burst of work (`boxyard dev`, `serve all`).
// V8 frees garbage, and with it the Buffers (outside its heap) that garbage still points to, only when it collects;
// a process that stops receiving requests stops allocating, so no collection comes, and `make run` stayed ~60–120 MiB
// above its idle size for as long as it idled after a transfer or listing load (issue 13: back within 20% of idle
// 60 s after any load). V8's own memory reducer starts only after a full collection, which such loads rarely cause.
// So: when the event loop has been nearly idle for one interval and RSS has grown since the last time, one full
// collection (tens of milliseconds on the product's ~80 MiB heap), at most once per interval.
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleMemoryOptions {
  /** How often to look (default 10 s). */
  intervalMs?: number;
  /** Growth of RSS since the last collection that is worth a collection (default 32 MiB). */
  minGrowthBytes?: number;
  /** Event-loop utilization below which the process counts as idle (default 0.05). */
  idleUtilization?: number;
}

/**
 * V8's full-collection function without --expose-gc on the command line (which would put `gc` on every module's
 * global): the flag is set for one new context, the function taken from there, the flag cleared again.
 */
function fullCollection(): () => void {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** Starts watching; the returned function stops it. The timer never keeps the process alive. */
export function releaseMemoryWhenIdle(options: IdleMemoryOptions = {}): () => void {
  const { intervalMs = 10_000, minGrowthBytes = 32 * 1024 * 1024, idleUtilization = 0.05 } = options;
  const collect = fullCollection();
  let baseline = process.memoryUsage.rss();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const rss = process.memoryUsage.rss();
    if (rss < baseline) baseline = rss;
    if (utilization >= idleUtilization || rss - baseline < minGrowthBytes) return;
    collect();
    baseline = process.memoryUsage.rss();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
