// `make bench ONLY=upgrade` (the real node, root only): what users' traffic sees while every service rolls twice —
// `helm upgrade` to another image tag, then `kubectl rollout restart` — with two replicas each
// (test/cluster/rolling-upgrade.ts, the same roll the real-cluster suite asserts). Per kind of traffic: requests
// served during the roll, failures (goal 0) and the longest wait for one answer; the download's and the SSE
// stream's outcome. Absolute counts, not ratios: the goal is none lost, whatever the machine's speed.
import { startDemo } from '../cluster/demo.ts';
import { describeRoll, rollUnderTraffic } from '../cluster/rolling-upgrade.ts';
import type { BenchRow } from './env.ts';

export async function benchUpgrade(): Promise<BenchRow[]> {
  if (process.getuid?.() !== 0) {
    console.log('upgrade: skipped (the real node needs root)');
    return [];
  }
  const demo = await startDemo((line) => console.log(`[upgrade] ${line}`));
  try {
    const result = await rollUnderTraffic(demo.cluster, 'demo');
    console.log(describeRoll(result));
    await result.shell.client.close();
    await result.shell.stop();
    const rows: BenchRow[] = [{ name: 'roll: helm upgrade + rollout restart, 2 replicas each', unit: 's', value: result.rollMs / 1000 }];
    for (const report of result.reports) {
      rows.push({ name: `${report.name}: served during the roll`, unit: 'req', value: report.served });
      rows.push({ name: `${report.name}: failed`, unit: 'req', value: report.failed, goal: '= 0', pass: report.failed === 0 });
      rows.push({ name: `${report.name}: longest stall`, unit: 'ms', value: report.longestStallMs });
    }
    const downloadOk = result.download.code === 0 && result.download.sha256 === result.download.expectedSha256;
    rows.push({ name: '512 MiB download across the roll: complete, same sha256', unit: 'ok', value: downloadOk ? 1 : 0, goal: '= 1', pass: downloadOk });
    rows.push({ name: 'SSE events lost', unit: 'events', value: result.events.missing.length, goal: '= 0', pass: result.events.missing.length === 0 });
    return rows;
  } finally {
    await demo.cluster.stop();
  }
}
