// `make bench ONLY=scale-operator` (issue 35, part 2, item 6): the operator on its own control plane with
// kube-controller-manager, kube-scheduler and kwok (fake nodes: pods become Running without containers), as
// test/bench/operator.ts runs it, at two sizes in the same run: 1,000 custom resources, then 2,000 more (3,000;
// BOXYARD_BENCH_OPERATOR_SIZES=200,600 for a quicker run). At each size, once every resource is Ready and the last
// status writes have landed, over a STEADY_SECONDS window with resyncs in it (--resync-period RESYNC_SECONDS, the
// default is 600 s: the window would hold none):
// - memory: the operator's RSS at the end of the window, per 1,000 resources over its RSS before any resource;
// - steady-state CPU: utime + stime (/proc/<pid>/stat) over the window, CPU-seconds per minute per 1,000 resources;
// - API writes at steady state, counted twice: by the operator's own client (boxyard_operator_api_requests_total,
//   all resources but its Lease) and by the kube-apiserver (apiserver_request_total of writes to the boxyard.io
//   group: only the operator writes those custom resources and their status). Goal 0 for both.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startControlPlane } from '../harness/kube.ts';
import type { startOperatorProcess } from '@boxyard/operator/test/support.ts';
import { adminClient, kubectl, metricSum, repoRoot, writesOf } from '@boxyard/operator/test/support.ts';
import type { BenchEnv, BenchRow } from './env.ts';
import { round } from './load.ts';
import { applyInBatches, benchKinds, benchResources, node, NS, readyResources, startBenchOperator, waitUntil } from './operator.ts';
import { growthRow } from './scale.ts';
import { cpuOf, rssOf } from './scale-procs.ts';

const sizes = ((): [number, number] => {
  const [small, large] = (process.env.BOXYARD_BENCH_OPERATOR_SIZES ?? '').split(',').map(Number);
  return small && large && large > small ? [small, large] : [1000, 3000];
})();
const RESYNC_SECONDS = 30;
const STEADY_SECONDS = 90;
const MiB = 1024 * 1024;
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY', 'CREATE', 'UPDATE', 'DELETECOLLECTION']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes the kube-apiserver served to the boxyard.io group so far (its /metrics). */
async function apiserverWrites(kubeconfig: string): Promise<number> {
  const text = await kubectl(kubeconfig, ['get', '--raw', '/metrics']);
  return metricSum(text, 'apiserver_request_total', (l) => l.group === 'boxyard.io' && WRITE_VERBS.has((l.verb ?? '').toUpperCase()));
}

interface Steady {
  rss: number;
  cpuPerMinute: number;
  operatorWrites: number;
  apiserverWrites: number;
  reconciles: number;
}

/** Waits until the operator stops writing, then measures a STEADY_SECONDS window. */
async function steadyState(operator: Awaited<ReturnType<typeof startOperatorProcess>>, kubeconfig: string, count: number): Promise<Steady> {
  let writes = writesOf(await operator.metrics());
  for (;;) {
    await sleep(5000);
    const now = writesOf(await operator.metrics());
    if (now === writes) break;
    writes = now;
  }
  const before = {
    cpu: cpuOf(operator.pid),
    apiserver: await apiserverWrites(kubeconfig),
    reconciles: metricSum(await operator.metrics(), 'controller_runtime_reconcile_total'),
    at: Date.now(),
  };
  await sleep(STEADY_SECONDS * 1000);
  const cpu = cpuOf(operator.pid);
  const minutes = (Date.now() - before.at) / 60_000;
  const metrics = await operator.metrics();
  const reconciles = metricSum(metrics, 'controller_runtime_reconcile_total') - before.reconciles;
  if (reconciles < count) throw new Error(`only ${reconciles} reconciles of ${count} resources in the steady-state window: the resync did not run`);
  return {
    rss: rssOf(operator.pid),
    cpuPerMinute: (cpu - before.cpu) / minutes,
    reconciles: reconciles / minutes,
    operatorWrites: (writesOf(metrics) - writes) / minutes,
    apiserverWrites: ((await apiserverWrites(kubeconfig)) - before.apiserver) / minutes,
  };
}

export async function benchScaleOperator(env: BenchEnv): Promise<BenchRow[]> {
  const plane = await startControlPlane({ dir: join(env.workDir, 'kube-scale'), controllers: true });
  const suffix = randomBytes(3).toString('hex');
  let operator: Awaited<ReturnType<typeof startOperatorProcess>> | undefined;
  const client = await adminClient(plane.kubeconfig);
  try {
    await applyInBatches(
      plane.kubeconfig,
      Array.from({ length: Math.ceil(sizes[1] / 240) + 1 }, (_, i) => node(i)),
    );
    await kubectl(
      plane.kubeconfig,
      ['apply', '-f', '-'],
      stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'bench' }, spec: { cidrs: ['10.96.0.0/16'] } }),
    );
    await kubectl(plane.kubeconfig, ['apply', '--server-side', '-f', join(repoRoot, 'crds')]);
    await kubectl(plane.kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=boxyard']);
    await kubectl(plane.kubeconfig, ['create', 'namespace', NS]);
    const bench = await startBenchOperator(env, plane.kubeconfig, `operator_scale_${suffix}`, RESYNC_SECONDS, 'operator-scale.log');
    operator = bench.operator;
    await sleep(5000);
    const emptyRss = rssOf(operator.pid);
    const custom = (from: number, to: number) => benchResources(env, bench.bucket, from, to);
    const at: Steady[] = [];
    let applied = 0;
    for (const size of sizes) {
      const started = Date.now();
      await applyInBatches(plane.kubeconfig, custom(applied, size));
      applied = size;
      await waitUntil('custom resources Ready', () => readyResources(client, benchKinds), size, 45 * 60_000);
      console.error(`  [bench] ${size} custom resources Ready after ${round((Date.now() - started) / 1000)} s; measuring ${STEADY_SECONDS} s of steady state`);
      at.push(await steadyState(operator, plane.kubeconfig, size));
      console.error(`  [bench] ${size}: ${JSON.stringify(at.at(-1))}`);
    }
    const [small, large] = at as [Steady, Steady];
    const perThousand = (value: number, size: number) => (value * 1000) / size;
    const memory = (s: Steady, size: number) => perThousand((s.rss - emptyRss) / MiB, size);
    return [
      {
        name: `operator RSS before any resource (then ${sizes.map((s) => s.toLocaleString('en')).join(' and ')} resources: ${round(small.rss / MiB)}, ${round(large.rss / MiB)} MiB)`,
        value: round(emptyRss / MiB),
        unit: 'MiB',
      },
      growthRow({
        name: 'operator memory (RSS growth) per 1,000 resources, steady state',
        unit: 'MiB',
        small: memory(small, sizes[0]),
        large: memory(large, sizes[1]),
        sizes,
        kind: 'cost',
        goal: '≤ 1.20× of the small size',
        pass: memory(large, sizes[1]) <= 1.2 * memory(small, sizes[0]),
      }),
      growthRow({
        name: `operator steady-state CPU per 1,000 resources (resync every ${RESYNC_SECONDS} s)`,
        unit: 'CPU-s/min',
        small: perThousand(small.cpuPerMinute, sizes[0]),
        large: perThousand(large.cpuPerMinute, sizes[1]),
        sizes,
        kind: 'cost',
        goal: '≤ 1.20× of the small size',
        pass: perThousand(large.cpuPerMinute, sizes[1]) <= 1.2 * perThousand(small.cpuPerMinute, sizes[0]),
      }),
      {
        name: `reconciles per minute at steady state (${sizes.map((s) => s.toLocaleString('en')).join(' → ')} resources)`,
        value: round(large.reconciles, 0),
        unit: '/min',
        baseline: round(small.reconciles, 0),
        ratio: round(large.reconciles / small.reconciles, 2),
      },
      {
        name: "API writes per minute at steady state, the operator's count",
        value: round(large.operatorWrites, 2),
        unit: 'writes/min',
        baseline: round(small.operatorWrites, 2),
        goal: '= 0 at both sizes',
        pass: large.operatorWrites === 0 && small.operatorWrites === 0,
      },
      {
        name: "API writes per minute at steady state to boxyard.io resources, the kube-apiserver's count",
        value: round(large.apiserverWrites, 2),
        unit: 'writes/min',
        baseline: round(small.apiserverWrites, 2),
        goal: '= 0 at both sizes',
        pass: large.apiserverWrites === 0 && small.apiserverWrites === 0,
      },
    ];
  } finally {
    await operator?.stop();
    client.close();
    await plane.stop();
  }
}
