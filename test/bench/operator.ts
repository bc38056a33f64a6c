// The operator at scale, on its own control plane with kube-controller-manager, kube-scheduler and kwok (fake
// nodes: pods become Running without containers): how long 1,000 custom resources take to become Ready, against
// the same control plane rolling out 1,000 plain Deployments applied directly (the baseline: what Kubernetes alone
// costs); the operator's peak memory; and its API writes per minute once everything is Ready (must be zero:
// level-triggered reconciles that find nothing to change must not write, even on resync).
// `BOXYARD_BENCH_OPERATOR_COUNT=200 make bench ONLY=operator` for a quicker run.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startControlPlane } from '../harness/kube.ts';
import { adminClient, kubectl, metricSum, repoRoot, startOperatorProcess, writesOf } from '@boxyard/operator/test/support.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow } from './env.ts';

export const NS = 'bench';
const BATCH = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Fake nodes for kwok: enough pod capacity for both runs. */
export const node = (i: number) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: `kwok-bench-${i}`,
    annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' },
    labels: { 'kubernetes.io/hostname': `kwok-bench-${i}`, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
  },
  status: { allocatable: { cpu: '64', memory: '512Gi', pods: '250' }, capacity: { cpu: '64', memory: '512Gi', pods: '250' } },
});

export async function applyInBatches(kubeconfig: string, objects: unknown[]): Promise<void> {
  for (let i = 0; i < objects.length; i += BATCH) {
    await kubectl(
      kubeconfig,
      ['apply', '-f', '-'],
      objects
        .slice(i, i + BATCH)
        .map((o) => stringify(o))
        .join('---\n'),
    );
  }
}

export async function waitUntil(what: string, count: () => Promise<number>, target: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  for (;;) {
    const n = await count();
    if (n >= target) return;
    if (n !== last) {
      console.log(`[bench operator]   ${what}: ${n}/${target}`);
      last = n;
    }
    if (Date.now() > deadline) throw new Error(`${what}: only ${n} of ${target} after ${timeoutMs / 1000} s`);
    await sleep(2000);
  }
}

type Listed = KubeObject & { status?: { observedGeneration?: number; conditions?: { type: string; status: string }[]; availableReplicas?: number } };

export async function readyResources(client: KubeClient, types: ResourceType[]): Promise<number> {
  let n = 0;
  for (const type of types) {
    for (const item of (await client.list<Listed>(type, NS)).items) {
      if (item.status?.observedGeneration === item.metadata.generation && item.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) n++;
    }
  }
  return n;
}

async function availableDeployments(client: KubeClient, namespace: string): Promise<number> {
  const list = await client.list<Listed>(resources.deployment, namespace);
  return list.items.filter(
    (d) =>
      d.status?.observedGeneration === d.metadata.generation &&
      d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') &&
      (d.status?.availableReplicas ?? 0) >= 1,
  ).length;
}

/** The three kinds, in turn, of the bench's custom resources. */
export const benchKinds = [resources.boxRepository, resources.fileShare, resources.terminalPool];

/** Resources `from`..`to` of the three kinds, sharing the bench's database secret and bucket (one prefix each). */
export function benchResources(env: BenchEnv, bucket: string, from: number, to: number): unknown[] {
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    const type = benchKinds[i % 3]!;
    const name = `svc-${i}`;
    const spec: Record<string, unknown> = { database: { secretRef: { name: 'db' }, schema: `s_${i}` } };
    if (type !== resources.terminalPool) spec.storage = { endpoint: env.minio.endpoint, bucket, prefix: name, credentialsSecretRef: { name: 's3' } };
    return { apiVersion: 'boxyard.io/v1alpha1', kind: type.kind, metadata: { name, namespace: NS }, spec };
  });
}

/** A database and the secrets the resources name, then the operator as its own process (resync every `resyncSeconds`). */
export async function startBenchOperator(env: BenchEnv, kubeconfig: string, database: string, resyncSeconds: number, logName: string) {
  const databaseUrl = await createBenchDatabase(env, database);
  await kubectl(kubeconfig, ['create', 'secret', 'generic', 'db', '-n', NS, `--from-literal=url=${databaseUrl}`]);
  await kubectl(kubeconfig, [
    'create',
    'secret',
    'generic',
    's3',
    '-n',
    NS,
    `--from-literal=accessKey=${env.minio.accessKey}`,
    `--from-literal=secretKey=${env.minio.secretKey}`,
  ]);
  const operator = await startOperatorProcess({
    kubeconfig,
    logFile: join(env.workDir, logName),
    args: ['--resync-period', String(resyncSeconds), '--default-image', 'registry.invalid/boxyard:bench'],
  });
  return { operator, bucket: database.replaceAll('_', '-') };
}

export async function benchOperator(env: BenchEnv): Promise<BenchRow[]> {
  const count = Number(process.env.BOXYARD_BENCH_OPERATOR_COUNT ?? 1000);
  const plane = await startControlPlane({ dir: join(env.workDir, 'kube'), controllers: true });
  const suffix = randomBytes(3).toString('hex');
  let operator: Awaited<ReturnType<typeof startOperatorProcess>> | undefined;
  const client = await adminClient(plane.kubeconfig);
  try {
    const nodes = Math.ceil((2 * count) / 240) + 1;
    await applyInBatches(
      plane.kubeconfig,
      Array.from({ length: nodes }, (_, i) => node(i)),
    );
    // The control plane's service range is a /24: room for a thousand Services more (ServiceCIDR, GA since 1.33).
    await kubectl(
      plane.kubeconfig,
      ['apply', '-f', '-'],
      stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'bench' }, spec: { cidrs: ['10.96.0.0/16'] } }),
    );
    await kubectl(plane.kubeconfig, ['apply', '--server-side', '-f', join(repoRoot, 'crds')]);
    await kubectl(plane.kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=boxyard']);
    for (const ns of [NS, 'baseline']) await kubectl(plane.kubeconfig, ['create', 'namespace', ns]);

    // Baseline: the same number of Deployments, applied directly.
    const deployments = Array.from({ length: count }, (_, i) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: `plain-${i}`, namespace: 'baseline' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: `plain-${i}` } },
        template: { metadata: { labels: { app: `plain-${i}` } }, spec: { containers: [{ name: 'app', image: 'registry.invalid/boxyard:bench' }] } },
      },
    }));
    let started = Date.now();
    await applyInBatches(plane.kubeconfig, deployments);
    await waitUntil('plain Deployments Available', () => availableDeployments(client, 'baseline'), count, 30 * 60_000);
    const baselineSeconds = (Date.now() - started) / 1000;
    console.log(`[bench operator] ${count} plain Deployments Available in ${round(baselineSeconds)} s`);

    // The operator, and as many resources of the three kinds (sharing one database and one bucket).
    const bench = await startBenchOperator(env, plane.kubeconfig, `operator_bench_${suffix}`, 20, 'operator.log');
    operator = bench.operator;
    const custom = benchResources(env, bench.bucket, 0, count);
    started = Date.now();
    await applyInBatches(plane.kubeconfig, custom);
    await waitUntil('custom resources Ready', () => readyResources(client, benchKinds), count, 30 * 60_000);
    const convergeSeconds = (Date.now() - started) / 1000;
    console.log(`[bench operator] ${count} custom resources Ready in ${round(convergeSeconds)} s`);

    // Steady state: let the last status writes land, then count writes over a minute with resyncs in it.
    let writes = writesOf(await operator.metrics());
    for (;;) {
      await sleep(5000);
      const now = writesOf(await operator.metrics());
      if (now === writes) break;
      writes = now;
    }
    const reconcilesBefore = metricSum(await operator.metrics(), 'controller_runtime_reconcile_total');
    const windowStart = Date.now();
    await sleep(60_000);
    const metrics = await operator.metrics();
    const minutes = (Date.now() - windowStart) / 60_000;
    const writesPerMinute = (writesOf(metrics) - writes) / minutes;
    const reconciles = metricSum(metrics, 'controller_runtime_reconcile_total') - reconcilesBefore;
    if (reconciles < count) throw new Error(`only ${reconciles} reconciles in the steady-state window: the resync did not run`);
    const status = readFileSync(`/proc/${operator.pid}/status`, 'utf8');
    const peakKiB = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    const steadyKiB = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    const errors = metricSum(metrics, 'controller_runtime_reconcile_errors_total');

    return [
      {
        name: `${count} custom resources to Ready (baseline: ${count} plain Deployments)`,
        value: round(convergeSeconds),
        unit: 's',
        baseline: round(baselineSeconds),
        ratio: round(convergeSeconds / baselineSeconds, 2),
        goal: '≤ 1.10×',
        pass: convergeSeconds / baselineSeconds <= 1.1,
      },
      { name: `operator peak memory (RSS) with ${count} resources`, value: round(peakKiB / 1024), unit: 'MiB' },
      { name: `operator memory (RSS) at steady state with ${count} resources`, value: round(steadyKiB / 1024), unit: 'MiB' },
      {
        name: `API writes per minute at steady state (${round(reconciles / minutes, 0)} reconciles/min)`,
        value: round(writesPerMinute, 2),
        unit: 'writes/min',
      },
      { name: 'reconcile errors (retried) during the run', value: errors, unit: 'errors' },
    ];
  } finally {
    await operator?.stop();
    client.close();
    await plane.stop();
  }
}
