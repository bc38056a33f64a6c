// A process that did a burst of work and then idles gives the memory back by itself: a child fills its heap with
// ~3 million small objects that survive into the old generation (as a load's request state does), lets them become
// garbage and goes quiet. releaseMemoryWhenIdle must then run its full collection (V8 prints it under --trace-gc as
// `testing`; V8's own memory reducer would come seconds later, and in the product often not at all) and the RSS, as
// `ps` shows it, must fall back by at least half the growth.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { releaseMemoryWhenIdle } from './idle-memory.ts';

const module = fileURLToPath(new URL('./idle-memory.ts', import.meta.url));
const MiB = 1024 * 1024;
const rssOf = async (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

it('releaseMemoryWhenIdle: the garbage of a finished burst is collected and RSS falls once the process idles', async () => {
  const script = `
    import { releaseMemoryWhenIdle } from ${JSON.stringify(module)};
    releaseMemoryWhenIdle({ intervalMs: 100, minGrowthBytes: 32 * 1024 * 1024 });
    const before = process.memoryUsage.rss();
    let burst = Array.from({ length: 48 }, (_, i) => Array.from({ length: 65536 }, (_, j) => ({ i, j })));
    console.log('burst ' + before + ' ' + process.memoryUsage.rss());
    burst = undefined;
    setInterval(() => {}, 1000); // idle, alive`;
  const child = spawn(process.execPath, ['--trace-gc', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  // Ends the child (and so the waits below) even when the test times out.
  setTimeout(() => child.kill(), 55_000).unref();
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    // Waits for events, not for a time: the test's own timeout is the limit.
    while (child.exitCode === null && !/burst \d+ \d+/.test(output)) await new Promise((resolve) => setTimeout(resolve, 50));
    const [before, afterBurst] = /burst (\d+) (\d+)/.exec(output)!.slice(1).map(Number) as [number, number];
    const growth = afterBurst - before;
    expect(growth).toBeGreaterThan(128 * MiB);
    const burstAt = output.indexOf('burst ');
    while (child.exitCode === null && !output.slice(burstAt).includes('testing')) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(output.slice(burstAt)).toContain('testing');
    // The memory-reducing kind, which also hands back the pages V8 would keep pooled.
    expect(output.slice(burstAt)).toMatch(/Mark-Compact \(reduce\)[^\n]*testing/);
    // V8 hands the freed pages back right after the collection, on its own threads.
    while (child.exitCode === null && (await rssOf(child.pid!)) > afterBurst - growth / 2) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await rssOf(child.pid!)).toBeLessThanOrEqual(afterBurst - growth / 2);
  } finally {
    child.kill();
  }
}, 60_000);

it('releaseMemoryWhenIdle: a later burst under the threshold is collected too while RSS is still well above its lowest', async () => {
  // 48 MiB stay in use after the first burst (as a load's caches and malloc's fragments do); the second burst adds
  // ~12 MiB of garbage (Buffers): under the threshold by itself, but RSS is then far above its lowest, so it is collected.
  const script = `
    import { releaseMemoryWhenIdle } from ${JSON.stringify(module)};
    releaseMemoryWhenIdle({ intervalMs: 100, minGrowthBytes: 32 * 1024 * 1024 });
    const kept = Array.from({ length: 48 }, () => Buffer.alloc(1024 * 1024, 1));
    let burst = Array.from({ length: 48 }, (_, i) => Array.from({ length: 65536 }, (_, j) => ({ i, j })));
    burst = undefined;
    console.log('first burst');
    process.stdin.once('data', () => {
      // Until RSS has grown by 12 MiB: V8 may still hold pages the first burst freed, and a burst that fits in them
      // grows nothing (nothing to give back, so no collection is due). Buffers, not heap objects: 12 MiB of objects
      // reach V8's own old-generation limit after the first collection, and V8 then collected them by itself before
      // the rule under test could (the test waited forever in loaded full runs).
      const start = process.memoryUsage.rss();
      let second = [];
      for (let i = 0; i < 64 && process.memoryUsage.rss() - start < 12 * 1024 * 1024; i++) second.push(Buffer.alloc(1024 * 1024, i));
      const grown = process.memoryUsage.rss() - start;
      second = undefined;
      console.log('second burst, ' + kept.length + ' MiB kept, RSS grew ' + grown);
    });
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--trace-gc', '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  setTimeout(() => child.kill(), 55_000).unref();
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const waitFor = async (text: string, after: string) => {
    while (child.exitCode === null && !output.slice(Math.max(0, output.indexOf(after))).includes(text)) await new Promise((resolve) => setTimeout(resolve, 50));
  };
  try {
    await waitFor('testing', 'first burst');
    child.stdin!.write('go\n');
    await waitFor('RSS grew', 'first burst');
    const grown = Number(/RSS grew (\d+)/.exec(output.slice(output.indexOf('second burst')))?.[1]);
    // Over a quarter of the threshold, under the threshold: collected because RSS is far above its lowest.
    expect(grown).toBeGreaterThanOrEqual(12 * MiB);
    expect(grown).toBeLessThan(32 * MiB);
    await waitFor('testing', 'second burst');
    expect(output.slice(output.indexOf('second burst'))).toContain('testing');
  } finally {
    child.kill();
  }
}, 60_000);

it('releaseMemoryWhenIdle: measures what a collection gave back after V8 has handed the pages back, not as it returns', async () => {
  // Played RSS (MiB): idle at 100; a load to 250; the collection returns before V8's threads give pages back, so
  // RSS still reads 250 right after it and falls to 160 later (60 MiB kept); the next load adds 15 MiB of garbage,
  // under the threshold by itself but RSS is far above its lowest: it must be collected.
  let rss = 100 * MiB;
  let reads = 0;
  let collections = 0;
  const stop = releaseMemoryWhenIdle({
    intervalMs: 5,
    minGrowthBytes: 32 * MiB,
    idleUtilization: 2, // always idle: the rule under test is the memory one
    rss: () => (reads++, rss),
    collect: () => collections++,
  });
  const ticks = async (n: number) => {
    const until = reads + n;
    while (reads < until) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  try {
    rss = 250 * MiB;
    while (collections < 1) await ticks(1);
    rss = 160 * MiB;
    await ticks(3);
    expect(collections).toBe(1);
    rss = 175 * MiB;
    await ticks(3);
    expect(collections).toBe(2);
  } finally {
    stop();
  }
});
