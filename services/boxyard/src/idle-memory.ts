// Gives memory back once the one-process product goes idle after a burst of work (`boxyard dev`, `serve all`).
// V8 frees garbage, and with it the Buffers (outside its heap) that garbage still points to, only when it collects;
// a process that stops receiving requests stops allocating, so no collection comes, and `make run` stayed ~60–120 MiB
// above its idle size for as long as it idled after a transfer or listing load (issue 13: back within 20% of idle
// 60 s after any load). V8's own memory reducer starts only after a full collection, which such loads rarely cause.
// So: when the event loop has been nearly idle for one interval and RSS is well above the lowest it has been, one
// full collection (tens of milliseconds on the product's ~80 MiB heap), at most once per interval, and only when RSS
// has grown since the last one (what a collection cannot give back, such as malloc's fragments, is not retried).
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleMemoryOptions {
  /** How often to look (default 10 s). */
  intervalMs?: number;
  /** RSS above the lowest seen that is worth a collection (default 32 MiB); a quarter of it since the last one. */
  minGrowthBytes?: number;
  /** Event-loop utilization below which the process counts as idle (default 0.05). */
  idleUtilization?: number;
  /** The process's RSS and a full collection: V8's and the kernel's, unless a test plays them. */
  rss?: () => number;
  collect?: () => void;
}

/**
 * V8's full-collection function without --expose-gc on the command line (which would put `gc` on every module's
 * global): the flag is set for one new context, the function taken from there, the flag cleared again.
 */
function fullCollection(): () => void {
  setFlagsFromString('--expose-gc');
  try {
    const gc = runInNewContext('gc') as (options: object) => void;
    // The memory-reducing kind (V8's `last-resort` flavor, what a low-memory notification runs; --trace-gc prints
    // `Mark-Compact (reduce)`): it also hands back the free pages V8 keeps pooled for reuse and compacts the old
    // generation. A plain one after the memory bench's loads back to back left 76 MB pooled and 117 MB committed
    // for 75 in use, and RSS at 1.68x idle; the reducing one took it to 0.9x (issue 35, --trace-gc, 2026-11-27).
    return () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** Starts watching; the returned function stops it. The timer never keeps the process alive. */
export function releaseMemoryWhenIdle(options: IdleMemoryOptions = {}): () => void {
  const { intervalMs = 10_000, minGrowthBytes = 32 * 1024 * 1024, idleUtilization = 0.05 } = options;
  const collect = options.collect ?? fullCollection();
  const rssNow = options.rss ?? (() => process.memoryUsage.rss());
  let lowest = rssNow();
  // The lowest RSS since the last collection: V8 hands freed pages back on its own threads after the collection
  // returns, so the RSS read right after it can still hold them (a busy machine: long after). Measured once there,
  // the next load's garbage had to outgrow pages already given back before it was collected.
  let sinceLastCollection = 0;
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const rss = rssNow();
    lowest = Math.min(lowest, rss);
    sinceLastCollection = Math.min(sinceLastCollection, rss);
    // Loads one after another: the first one's collection leaves RSS above the lowest; the next load's garbage is
    // collected too once it has added a quarter of the threshold, though that alone is under the threshold.
    if (utilization >= idleUtilization || rss - lowest < minGrowthBytes || rss - sinceLastCollection < minGrowthBytes / 4) return;
    collect();
    sinceLastCollection = rssNow();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
