// The operator end to end, as a platform engineer uses it: the chart's CRDs and RBAC on a control plane with
// kube-controller-manager, kube-scheduler and kwok (Deployments become Available), the operator running under
// exactly the chart's ServiceAccount (impersonated), resources applied with kubectl, and the data outside the
// cluster checked in the real PostgreSQL and MinIO.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createTestBucket, createTestDatabase, type TestBucket } from '../../test/harness/fixtures.ts';
import { startControlPlane, type RunningControlPlane } from '../../test/harness/kube.ts';
import type { ServiceResource } from '../src/crds/types.ts';
import type { KubeClient } from '../src/kube/client.ts';
import { resources, type ResourceType } from '../src/kube/resources.ts';
import type { Condition, KubeObject } from '../src/kube/types.ts';
import {
  adminClient,
  impersonatingKubeconfig,
  installChartRbac,
  kubectl,
  metricSum,
  repoRoot,
  startOperatorProcess,
  waitFor,
  writesOf,
  type OperatorProcess,
} from './support.ts';

const NS = 'apps';
const suffix = randomBytes(3).toString('hex');

let plane: RunningControlPlane;
let dir: string;
let admin: KubeClient;
let operator: OperatorProcess;
let databaseUrl: string;
let minio: { endpoint: string; accessKey: string; secretKey: string };
let bucket: TestBucket;

const apply = (manifest: unknown) => kubectl(plane.kubeconfig, ['apply', '-n', NS, '-f', '-'], stringify(manifest));
const get = <T extends KubeObject = KubeObject>(type: ResourceType, name: string, namespace = NS) => admin.get<T>(type, namespace, name);
const condition = (r: ServiceResource | undefined, type: string): Condition | undefined => r?.status?.conditions?.find((c) => c.type === type);

/** An example from crds/examples/, pointed at this run's MinIO and given a fresh bucket. */
async function example(file: string, edit: (spec: Record<string, any>) => void = () => {}): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const manifest = parse(await readFile(join(repoRoot, 'crds', 'examples', file), 'utf8'));
  if (manifest.spec.storage) {
    manifest.spec.storage.endpoint = minio.endpoint;
    manifest.spec.storage.bucket = `${manifest.spec.storage.bucket}-${suffix}`;
  }
  edit(manifest.spec);
  return manifest;
}

async function ready(type: ResourceType, name: string, timeoutMs = 90_000): Promise<ServiceResource> {
  return waitFor(`${type.kind} ${name} to be Ready at its generation`, async () => {
    const r = await get<ServiceResource>(type, name);
    return r && r.status?.observedGeneration === r.metadata.generation && condition(r, 'Ready')?.status === 'True' ? r : undefined;
  }, timeoutMs);
}

async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}
const schemaExists = async (schema: string) => (await query('select 1 from pg_namespace where nspname = $1', [schema])).length === 1;

async function objectNames(bucketName: string, prefix = ''): Promise<string[]> {
  const names: string[] = [];
  for await (const item of bucket.client.listObjectsV2(bucketName, prefix, true)) if (item.name) names.push(item.name);
  return names.sort();
}

const secretValue = async (name: string, key: string) => {
  const secret = await get<KubeObject & { data?: Record<string, string> }>(resources.secret, name);
  return secret?.data?.[key] ? Buffer.from(secret.data[key], 'base64').toString() : undefined;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'operator-e2e-'));
  minio = inject('minio');
  [plane, databaseUrl, bucket] = await Promise.all([startControlPlane({ dir: join(dir, 'plane'), controllers: true }), createTestDatabase('operator'), createTestBucket('operator')]);
  admin = await adminClient(plane.kubeconfig);
  // The Prometheus Operator's ServiceMonitor CRD (schema-less stand-in): the operator adds ServiceMonitors when it exists.
  await kubectl(plane.kubeconfig, ['apply', '-f', '-'], stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'servicemonitors.monitoring.coreos.com' },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: { kind: 'ServiceMonitor', listKind: 'ServiceMonitorList', plural: 'servicemonitors', singular: 'servicemonitor' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  }));
  await kubectl(plane.kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/servicemonitors.monitoring.coreos.com']);
  const user = await installChartRbac(plane.kubeconfig, 'boxyard-system');
  const kubeconfig = await impersonatingKubeconfig(plane.kubeconfig, user, join(dir, 'operator-kubeconfig'));
  await kubectl(plane.kubeconfig, ['create', 'namespace', NS]);
  await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'db', '-n', NS, `--from-literal=url=${databaseUrl}`]);
  await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 's3', '-n', NS, `--from-literal=accessKey=${minio.accessKey}`, `--from-literal=secretKey=${minio.secretKey}`]);
  // As the chart runs it (leader election on), with a short resync so the steady-state check sees several rounds.
  operator = await startOperatorProcess({
    kubeconfig,
    logFile: join(dir, 'operator.log'),
    args: ['--leader-elect', '--leader-election-namespace', 'boxyard-system', '--leader-election-id', 'boxyard', '--resync-period', '3', '--default-image', 'registry.invalid/boxyard:test'],
  });
}, 180_000);

afterAll(async () => {
  if (operator && process.env.BOXYARD_TEST_VERBOSE) console.log(operator.log());
  await operator?.stop();
  await plane?.stop();
  admin?.close();
  if (!process.env.BOXYARD_KEEP_TEST_DIR) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('the operator under the chart\'s RBAC', { timeout: 150_000 }, () => {
  it('turns each kind into its children and reports Ready when the Deployment is Available', async () => {
    await apply(await example('box-repository.yaml'));
    await apply(await example('file-share.yaml'));
    await apply(await example('terminal-pool.yaml', (spec) => (spec.deletionPolicy = 'Retain')));
    const [boxes, files, shells] = await Promise.all([ready(resources.boxRepository, 'boxes'), ready(resources.fileShare, 'files'), ready(resources.terminalPool, 'shells')]);

    // BoxRepository: two replicas behind an Ingress with TLS.
    expect(boxes.status).toMatchObject({ url: 'https://boxes.example.com', replicas: 2, readyReplicas: 2, storage: { bucketCreated: true } });
    expect(condition(boxes, 'Ready')).toMatchObject({ reason: 'Available', observedGeneration: boxes.metadata.generation });
    expect(condition(boxes, 'Stalled')?.status).toBe('False');
    const deployment = (await get(resources.deployment, 'boxes-box-repository')) as KubeObject & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(deployment.spec.replicas).toBe(2);
    const container = deployment.spec.template.spec.containers[0];
    expect(container).toMatchObject({ image: 'registry.invalid/boxyard:test', args: ['serve', 'box-repository', '--config', '/etc/boxyard/config.yaml'] });
    expect(container.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(deployment.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'BoxRepository', name: 'boxes', uid: boxes.metadata.uid, controller: true })]);
    const ingress = (await get(resources.ingress, 'boxes-box-repository')) as KubeObject & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(ingress.spec.tls).toEqual([{ hosts: ['boxes.example.com'], secretName: 'boxes-tls' }]);
    expect(await get(resources.podDisruptionBudget, 'boxes-box-repository')).toBeDefined();
    expect(await get(resources.networkPolicy, 'boxes-box-repository')).toBeDefined();
    const monitor = (await get(resources.serviceMonitor, 'boxes-box-repository')) as KubeObject & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(monitor.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '30s' }]);
    const config = parse(((await get(resources.configMap, 'boxes-box-repository-config')) as KubeObject & { data: Record<string, string> }).data['config.yaml']!);
    expect(config.storage).toMatchObject({ driver: 's3', bucket: `vagrant-boxes-${suffix}`, endpoint: minio.endpoint });
    expect(config.uploads.max_bytes).toBe(21474836480);
    expect(await bucket.client.bucketExists(`vagrant-boxes-${suffix}`)).toBe(true); // created by the pre-rollout check
    expect(await secretValue('boxes-box-repository-session', 'secret')).toMatch(/^[\w-]{64}$/);

    // FileShare: one replica behind an Ingress of the default class (the example names none), no PDB.
    expect(files.status?.url).toBe('https://files.example.com');
    const filesIngress = await get<{ spec: { rules: unknown[]; ingressClassName?: string } } & KubeObject>(resources.ingress, 'files-file-share');
    expect(filesIngress?.spec.rules).toEqual([expect.objectContaining({ host: 'files.example.com' })]);
    expect(filesIngress?.spec.ingressClassName).toBeUndefined();
    expect(await get(resources.podDisruptionBudget, 'files-file-share')).toBeUndefined();

    // TerminalPool: the gateway's ServiceAccount may manage pods in its namespace, and nowhere else.
    expect(shells.status?.url).toBe('https://shells.example.com');
    const gateway = `system:serviceaccount:${NS}:shells-terminal`;
    const can = async (verb: string, resource: string, namespace: string) =>
      (await kubectl(plane.kubeconfig, ['auth', 'can-i', verb, resource, '-n', namespace, `--as=${gateway}`]).catch((e: Error) => e.message)).trim();
    expect(await can('create', 'pods', NS)).toBe('yes');
    expect(await can('delete', 'pods', NS)).toBe('yes');
    expect(await can('create', 'pods', 'default')).not.toBe('yes');
    expect(await can('get', 'secrets', NS)).not.toBe('yes');

    // What `kubectl get` shows a platform engineer.
    const table = await kubectl(plane.kubeconfig, ['get', 'boxrepositories', '-n', NS]);
    expect(table).toMatch(/NAME\s+READY\s+STATUS\s+REPLICAS\s+AVAILABLE\s+URL\s+AGE/);
    expect(table).toMatch(/boxes\s+True\s+Available\s+2\s+2\s+https:\/\/boxes\.example\.com/);
    await kubectl(plane.kubeconfig, ['wait', '--for=condition=Ready', '--timeout=10s', '-n', NS, 'boxrepository/boxes', 'fileshare/files', 'terminalpool/shells']);
  });

  it('updates the children when the spec changes and reports the new generation', async () => {
    const before = (await get(resources.deployment, 'boxes-box-repository')) as KubeObject & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const checksum = before.spec.template.metadata.annotations['boxyard.io/config-checksum'];
    await kubectl(plane.kubeconfig, ['patch', 'boxrepository', 'boxes', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { replicas: 1, uploads: { maxBytes: 1073741824 }, monitoring: { serviceMonitor: { enabled: false } } } })]);
    const boxes = await ready(resources.boxRepository, 'boxes');
    expect(boxes.metadata.generation).toBe(2);
    const after = (await get(resources.deployment, 'boxes-box-repository')) as KubeObject & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(after.spec.replicas).toBe(1);
    expect(after.spec.template.metadata.annotations['boxyard.io/config-checksum']).not.toBe(checksum); // pods roll onto the new config
    const config = parse(((await get(resources.configMap, 'boxes-box-repository-config')) as KubeObject & { data: Record<string, string> }).data['config.yaml']!);
    expect(config.uploads.max_bytes).toBe(1073741824);
    await waitFor('the PodDisruptionBudget to go with one replica', async () => (await get(resources.podDisruptionBudget, 'boxes-box-repository')) === undefined);
    expect(await get(resources.serviceMonitor, 'boxes-box-repository')).toBeUndefined();
    expect(boxes.status).toMatchObject({ replicas: 1, readyReplicas: 1 });
  });

  it('reports Stalled with an actionable reason for a bad database Secret, and recovers once it is fixed', async () => {
    const wrong = new URL(databaseUrl);
    wrong.password = 'not-the-password';
    await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'bad-db', '-n', NS, `--from-literal=url=${wrong}`]);
    await apply(await example('file-share.yaml', (spec) => {
      spec.database = { secretRef: { name: 'bad-db' }, schema: 'broken_share' };
      spec.storage.prefix = 'broken';
    }).then((m) => ({ ...m, metadata: { name: 'broken' } })));
    const stalled = await waitFor('FileShare broken to be Stalled', async () => {
      const r = await get<ServiceResource>(resources.fileShare, 'broken');
      return condition(r, 'Stalled')?.status === 'True' ? r : undefined;
    });
    expect(condition(stalled, 'Stalled')).toMatchObject({ reason: 'DatabaseAuthenticationFailed', observedGeneration: 1 });
    expect(condition(stalled, 'Stalled')?.message).toMatch(/Secret "bad-db" key "url"/);
    expect(condition(stalled, 'Stalled')?.message).not.toContain('not-the-password');
    expect(condition(stalled, 'Ready')?.status).toBe('False');
    expect(condition(stalled, 'Reconciling')?.status).toBe('False');
    expect(await get(resources.deployment, 'broken-file-share')).toBeUndefined(); // nothing rolled out against a database it cannot reach
    const events = await kubectl(plane.kubeconfig, ['get', 'events', '-n', NS, '--field-selector=involvedObject.name=broken', '-o', 'json']);
    expect((JSON.parse(events) as { items: { type: string; reason: string }[] }).items).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'DatabaseAuthenticationFailed' }));
    const missing = await waitFor('a missing Secret to be reported', async () => {
      await kubectl(plane.kubeconfig, ['patch', 'fileshare', 'broken', '-n', NS, '--type=merge', '-p', '{"spec":{"database":{"secretRef":{"name":"nowhere"}}}}']);
      const r = await get<ServiceResource>(resources.fileShare, 'broken');
      return condition(r, 'Stalled')?.reason === 'SecretNotFound' ? r : undefined;
    });
    expect(condition(missing, 'Stalled')?.message).toMatch(/Secret "nowhere" \(spec\.database\.secretRef\) does not exist in namespace "apps"/);

    // Fixing the Secret is noticed through the Secret's own watch event, not only on resync.
    await kubectl(plane.kubeconfig, ['patch', 'fileshare', 'broken', '-n', NS, '--type=merge', '-p', '{"spec":{"database":{"secretRef":{"name":"bad-db"}}}}']);
    await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'bad-db', '-n', NS, `--from-literal=url=${databaseUrl}`, '--dry-run=client', '-o', 'yaml'])
      .then((yaml) => kubectl(plane.kubeconfig, ['replace', '-f', '-'], yaml));
    await ready(resources.fileShare, 'broken');
  });

  it('with deletionPolicy Delete drops the schema and the stored objects before letting the resource go', async () => {
    // A FileShare in a bucket it shares with others (its prefix only), a BoxRepository in a bucket it created.
    const shared = bucket.bucket;
    await apply(await example('file-share.yaml', (spec) => {
      spec.storage = { endpoint: minio.endpoint, bucket: shared, prefix: 'scratch', credentialsSecretRef: { name: 's3' }, createBucket: false };
      spec.database = { secretRef: { name: 'db' }, schema: 'scratch_share' };
      spec.deletionPolicy = 'Delete';
    }).then((m) => ({ ...m, metadata: { name: 'scratch' } })));
    await apply(await example('box-repository.yaml', (spec) => {
      spec.storage.bucket = `temp-${suffix}`;
      spec.database = { secretRef: { name: 'db' }, schema: 'temp_boxes' };
      spec.deletionPolicy = 'Delete';
      spec.replicas = 1;
      delete spec.ingress;
    }).then((m) => ({ ...m, metadata: { name: 'temp' } })));
    await Promise.all([ready(resources.fileShare, 'scratch'), ready(resources.boxRepository, 'temp')]);
    // What the services would have written.
    await query('create schema if not exists scratch_share; create table scratch_share.files (id int); create schema if not exists temp_boxes; create table temp_boxes.boxes (id int)');
    for (const key of ['scratch/a.txt', 'scratch/dir/b.txt', 'other/keep.txt']) await bucket.client.putObject(shared, key, Buffer.from(key));
    await bucket.client.putObject(`temp-${suffix}`, 'boxes/x.box', Buffer.from('box'));

    await kubectl(plane.kubeconfig, ['delete', 'fileshare/scratch', 'boxrepository/temp', '-n', NS, '--wait=true', '--timeout=90s']);
    expect(await schemaExists('scratch_share')).toBe(false);
    expect(await schemaExists('temp_boxes')).toBe(false);
    expect(await objectNames(shared)).toEqual(['other/keep.txt']); // only the prefix went
    expect(await bucket.client.bucketExists(`temp-${suffix}`)).toBe(false); // the bucket it created went too
    expect(await get(resources.fileShare, 'scratch')).toBeUndefined(); // the finalizer was removed
  });

  it('with deletionPolicy Retain keeps the data and the generated Secrets, which a re-created resource adopts', async () => {
    await query('create schema if not exists file_share; create table file_share.files (id int); insert into file_share.files values (1)');
    await bucket.client.putObject(`shared-files-${suffix}`, 'team-a/report.pdf', Buffer.from('pdf'));
    const session = await secretValue('files-file-share-session', 'secret');
    await kubectl(plane.kubeconfig, ['delete', 'fileshare/files', '-n', NS, '--wait=true', '--timeout=90s']);
    expect(await query('select id from file_share.files')).toEqual([{ id: 1 }]);
    expect(await objectNames(`shared-files-${suffix}`)).toEqual(['team-a/report.pdf']);
    const kept = await get(resources.secret, 'files-file-share-session');
    expect(kept?.metadata.ownerReferences ?? []).toEqual([]); // orphaned on purpose, so the garbage collector keeps it

    await apply(await example('file-share.yaml'));
    const files = await ready(resources.fileShare, 'files');
    expect(await secretValue('files-file-share-session', 'secret')).toBe(session); // same key: existing sessions stay valid
    const adopted = await get(resources.secret, 'files-file-share-session');
    expect(adopted?.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: files.metadata.uid, controller: true })]);
  });

  it('leaves a paused resource alone until the annotation is removed', async () => {
    await kubectl(plane.kubeconfig, ['annotate', 'terminalpool/shells', '-n', NS, 'boxyard.io/paused=true']);
    await waitFor('the pause to show in the status', async () => condition(await get<ServiceResource>(resources.terminalPool, 'shells'), 'Reconciling')?.reason === 'Paused');
    const pausedBefore = metricSum(await operator.metrics(), 'boxyard_operator_reconcile_total', (l) => l.controller === 'terminalpools' && l.result === 'paused');
    await kubectl(plane.kubeconfig, ['patch', 'terminalpool/shells', '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":3}}']);
    // The operator saw the change (and skipped it): more paused reconciles, and the Deployment is untouched.
    await waitFor('a paused reconcile after the change', async () =>
      metricSum(await operator.metrics(), 'boxyard_operator_reconcile_total', (l) => l.controller === 'terminalpools' && l.result === 'paused') >= pausedBefore + 2);
    expect(((await get(resources.deployment, 'shells-terminal')) as KubeObject & { spec: { replicas: number } }).spec.replicas).toBe(1);
    await kubectl(plane.kubeconfig, ['annotate', 'terminalpool/shells', '-n', NS, 'boxyard.io/paused-']);
    const shells = await ready(resources.terminalPool, 'shells');
    expect(shells.status?.readyReplicas).toBe(3);
  });

  it('issues no API writes at steady state', async () => {
    const all = [
      [resources.boxRepository, 'boxes'],
      [resources.fileShare, 'files'],
      [resources.fileShare, 'broken'],
      [resources.terminalPool, 'shells'],
    ] as const;
    for (const [type, name] of all) await ready(type, name);
    // Events from the last transitions may still be in flight: let the counters settle, then watch resyncs go by.
    const reconciles = async () => metricSum(await operator.metrics(), 'boxyard_operator_reconcile_total', (l) => l.result === 'success');
    let writes = writesOf(await operator.metrics());
    await waitFor('writes to settle', async () => {
      const now = writesOf(await operator.metrics());
      const settled = now === writes;
      writes = now;
      return settled;
    }, 30_000, 2000);
    const start = await reconciles();
    await waitFor('two resync rounds over every resource', async () => (await reconciles()) >= start + 2 * all.length, 30_000, 500);
    expect(writesOf(await operator.metrics())).toBe(writes);
    expect(metricSum(await operator.metrics(), 'boxyard_operator_api_requests_total', (l) => l.code === '403')).toBe(0); // the chart's RBAC sufficed
  });
});
