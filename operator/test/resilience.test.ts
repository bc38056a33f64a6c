// What the controller runtime promises when things fail: two operator processes elect one leader and only it
// writes; killing the leader hands over within the lease time; a kill -9 in the middle of reconciling converges
// after restart without duplicate children (and without regenerating secrets); an apiserver restart, after which
// watches resume from a resourceVersion the apiserver no longer has (410 Gone), is survived.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { startControlPlane, type RunningControlPlane } from '@boxyard/test/harness/kube.ts';
import type { ServiceResource } from '../src/crds/types.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import {
  adminClient,
  impersonatingKubeconfig,
  installChartRbac,
  kubectl,
  metricSum,
  restartApiserver,
  startOperatorProcess,
  waitFor,
  writesOf,
  type OperatorProcess,
} from './support.ts';

const NS = 'load';
const SYSTEM = 'boxyard-system';
const LEASE_SECONDS = 6;
const RETRY_SECONDS = 1;

let plane: RunningControlPlane;
let dir: string;
let admin: KubeClient;
let kubeconfig: string;
let apiserver: { stop(): Promise<void> } | undefined;
const operators: OperatorProcess[] = [];

type Lease = KubeObject & { spec: { holderIdentity?: string; acquireTime?: string; renewTime?: string; leaseTransitions?: number } };
const lease = () => admin.get<Lease>(resources.lease, SYSTEM, 'boxyard');

async function startOperator(identity: string, extra: string[] = []): Promise<OperatorProcess> {
  const operator = await startOperatorProcess({
    kubeconfig,
    identity,
    logFile: join(dir, `${identity}.log`),
    args: [
      '--leader-elect',
      '--leader-election-namespace',
      SYSTEM,
      '--leader-election-id',
      'boxyard',
      '--lease-duration',
      String(LEASE_SECONDS),
      '--renew-deadline',
      '4',
      '--retry-period',
      String(RETRY_SECONDS),
      '--default-image',
      'registry.invalid/boxyard:test',
      ...extra, // later flags win
    ],
  });
  operators.push(operator);
  return operator;
}

const pool = (name: string, replicas = 1) => ({
  apiVersion: 'boxyard.io/v1alpha1',
  kind: 'TerminalPool',
  metadata: { name, namespace: NS },
  spec: { replicas, database: { secretRef: { name: 'db' }, schema: `pool_${name.replace(/-/g, '_')}` }, networkPolicy: { enabled: true } },
});
const applyAll = (objects: unknown[]) => kubectl(plane.kubeconfig, ['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));

async function readyPools(): Promise<Set<string>> {
  const list = await admin.list<ServiceResource>(resources.terminalPool, NS);
  return new Set(
    list.items
      .filter((r) => r.status?.observedGeneration === r.metadata.generation && r.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      .map((r) => r.metadata.name),
  );
}
const allReady = (names: string[]) =>
  waitFor(
    `${names.length} TerminalPools to be Ready`,
    async () => {
      const ready = await readyPools();
      return names.every((n) => ready.has(n));
    },
    150_000,
    500,
  );

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'operator-resilience-'));
  const [started, databaseUrl] = await Promise.all([startControlPlane({ dir: join(dir, 'plane'), controllers: true }), createTestDatabase('resilience')]);
  plane = started;
  admin = await adminClient(plane.kubeconfig);
  const user = await installChartRbac(plane.kubeconfig, SYSTEM);
  kubeconfig = await impersonatingKubeconfig(plane.kubeconfig, user, join(dir, 'operator-kubeconfig'));
  await kubectl(plane.kubeconfig, ['create', 'namespace', NS]);
  await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'db', '-n', NS, `--from-literal=url=${databaseUrl}`]);
}, 180_000);

afterAll(async () => {
  await Promise.allSettled(operators.map((o) => o.kill()));
  await apiserver?.stop();
  await plane?.stop();
  admin?.close();
  if (!process.env.BOXYARD_KEEP_TEST_DIR) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('operator resilience', { timeout: 240_000 }, () => {
  let leader: OperatorProcess;
  let standby: OperatorProcess;
  // From the second test on, `leader` is the only operator process: no hand-over while it is frozen.

  it('elects one leader of two processes; only the leader writes; killing it hands over within the lease time', async () => {
    const [a, b] = await Promise.all([startOperator('op-a'), startOperator('op-b')]);
    const holder = await waitFor('a lease holder', async () => (await lease())?.spec.holderIdentity || undefined);
    [leader, standby] = holder === 'op-a' ? [a, b] : [b, a];
    await applyAll([pool('p1'), pool('p2', 2)]);
    await allReady(['p1', 'p2']);

    const [leaderMetrics, standbyMetrics] = await Promise.all([leader.metrics(), standby.metrics()]);
    expect(metricSum(leaderMetrics, 'boxyard_operator_leader')).toBe(1);
    expect(metricSum(standbyMetrics, 'boxyard_operator_leader')).toBe(0);
    expect(writesOf(leaderMetrics)).toBeGreaterThan(0);
    expect(writesOf(standbyMetrics)).toBe(0); // the standby only reads the Lease
    expect(metricSum(standbyMetrics, 'boxyard_operator_api_requests_total', (l) => l.resource !== 'leases' && l.resource !== undefined)).toBe(0);

    const before = (await lease())!;
    await leader.kill(); // kill -9: no release of the lease
    const after = await waitFor(
      'the standby to take the lease',
      async () => {
        const current = await lease();
        return current?.spec.holderIdentity === (leader === a ? 'op-b' : 'op-a') ? current : undefined;
      },
      60_000,
    );
    // Measured on the Lease's own clock: the standby took over at most a lease duration (plus its polling period
    // and request latency) after the leader's last renewal.
    const gapSeconds = (Date.parse(after.spec.acquireTime!) - Date.parse(before.spec.renewTime!)) / 1000;
    expect(gapSeconds).toBeGreaterThanOrEqual(LEASE_SECONDS - RETRY_SECONDS);
    expect(gapSeconds).toBeLessThan(LEASE_SECONDS + 2 * RETRY_SECONDS + 5);
    expect(after.spec.leaseTransitions).toBe((before.spec.leaseTransitions ?? 0) + 1);
    [leader, standby] = [standby, leader];
    await applyAll([pool('p3')]);
    await allReady(['p3']); // the new leader reconciles
  });

  it('converges without duplicate children when killed in the middle of reconciling, and keeps generated secrets', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `batch-${i}`);
    await applyAll(names.map((n) => pool(n)));
    // kill -9 as soon as the first children of the batch appear.
    await waitFor(
      'the first Deployment of the batch',
      async () =>
        (await admin.list(resources.deployment, NS, { labelSelector: 'app.kubernetes.io/instance in (batch-0,batch-1,batch-2,batch-3)' })).items.length > 0,
      60_000,
      20,
    );
    await leader.kill();
    await standby.kill(); // the restarted process below is the only candidate
    const readyAtKill = [...(await readyPools())].filter((n) => n.startsWith('batch-')).length;
    expect(readyAtKill).toBeLessThan(names.length); // the kill really landed mid-way
    const sessionBefore = new Map<string, string>();
    for (const secret of (await admin.list<KubeObject & { data?: Record<string, string> }>(resources.secret, NS)).items) {
      if (secret.metadata.name.endsWith('-session')) sessionBefore.set(secret.metadata.name, secret.data?.secret ?? '');
    }

    leader = await startOperator('op-c'); // takes over once the killed leader's lease expires
    await allReady(names);

    const pools = (await admin.list<ServiceResource>(resources.terminalPool, NS)).items;
    const owners = new Map(pools.map((p) => [p.metadata.uid, p.metadata.name]));
    for (const type of [
      resources.deployment,
      resources.service,
      resources.configMap,
      resources.networkPolicy,
      resources.serviceAccount,
      resources.roleBinding,
    ]) {
      const children = (await admin.list(type, NS, { labelSelector: 'app.kubernetes.io/managed-by=boxyard-operator' })).items;
      const perOwner = new Map<string, number>();
      for (const child of children) {
        const uid = child.metadata.ownerReferences?.find((r) => r.controller)?.uid ?? '';
        expect(owners.has(uid), `${type.kind} ${child.metadata.name} has a live owner`).toBe(true);
        perOwner.set(uid, (perOwner.get(uid) ?? 0) + 1);
      }
      expect(
        [...perOwner.values()].every((n) => n === 1),
        `one ${type.kind} per TerminalPool`,
      ).toBe(true);
      expect(perOwner.size, `every TerminalPool has its ${type.kind}`).toBe(pools.length);
    }
    // The gateways are bound to the chart's ClusterRole: the operator creates no Roles.
    expect((await admin.list(resources.role, NS, { labelSelector: 'app.kubernetes.io/managed-by=boxyard-operator' })).items).toEqual([]);
    const secrets = (await admin.list<KubeObject & { data?: Record<string, string> }>(resources.secret, NS)).items;
    expect(secrets.filter((s) => s.metadata.name.endsWith('-session'))).toHaveLength(pools.length);
    expect(secrets.filter((s) => s.metadata.name.endsWith('-admin'))).toHaveLength(pools.length);
    for (const [name, value] of sessionBefore) expect(secrets.find((s) => s.metadata.name === name)?.data?.secret, `${name} never overwritten`).toBe(value);
  });

  it('survives an apiserver restart and resumes its watches after 410 Gone', async () => {
    // A lease long enough that a few seconds without an apiserver do not cost the leadership: the informers must
    // then resume their watches themselves rather than start over with the next leader term.
    await leader.stop(); // releases the lease
    leader = await startOperator('op-d', ['--lease-duration', '60', '--renew-deadline', '45', '--retry-period', '2']);
    await waitFor('op-d to lead', async () => (await lease())?.spec.holderIdentity === 'op-d');
    await waitFor(
      'op-d caches synced',
      async () => metricSum(await leader.metrics(), 'boxyard_operator_cached_objects', (l) => l.resource === 'terminalpools') >= 43,
    );
    const expiredBefore = metricSum(await leader.metrics(), 'boxyard_operator_watch_restarts_total', (l) => l.reason === 'expired');
    // The restarted apiserver's watch cache starts at the current revision: the resourceVersions the operator
    // resumes from are older than that, and the apiserver answers them with 410 Gone.
    apiserver = await restartApiserver(plane.server, join(dir, 'kube-apiserver-restarted.log'));
    await waitFor('the restarted apiserver', async () => (await kubectl(plane.kubeconfig, ['get', '--raw', '/readyz'])).trim() === 'ok', 60_000, 250);
    await kubectl(plane.kubeconfig, ['patch', 'terminalpool/p1', '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":2}}']);
    await applyAll([pool('after-restart')]);
    await allReady(['p1', 'after-restart']);
    const p1 = await admin.get<ServiceResource>(resources.terminalPool, NS, 'p1');
    expect(p1?.status).toMatchObject({ observedGeneration: 2, readyReplicas: 2 });
    const metrics = await leader.metrics();
    expect(metricSum(metrics, 'boxyard_operator_watch_restarts_total', (l) => l.reason === 'expired')).toBeGreaterThan(expiredBefore); // 410 Gone, answered with a relist
    expect(metricSum(metrics, 'boxyard_operator_leader')).toBe(1); // same leader term throughout
    expect(leader.log()).not.toMatch(/stepping down/);
    expect(leader.child.exitCode).toBeNull();
  });
});
