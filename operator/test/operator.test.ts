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
import { createTestBucket, createTestDatabase, type TestBucket } from '@boxyard/test/harness/fixtures.ts';
import { startMinio } from '@boxyard/test/harness/minio.ts';
import { startControlPlane, type RunningControlPlane } from '@boxyard/test/harness/kube.ts';
import type { ServiceResource } from '../src/crds/types.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import type { Condition, KubeObject } from '@boxyard/kit/kube/types.ts';
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
let operatorUser: string;
const tokens: Record<'reader' | 'stranger', string> = { reader: '', stranger: '' };

const apply = (manifest: unknown) => kubectl(plane.kubeconfig, ['apply', '-n', NS, '-f', '-'], stringify(manifest));
const get = <T extends KubeObject = KubeObject>(type: ResourceType, name: string, namespace = NS) => admin.get<T>(type, namespace, name);
const condition = (r: ServiceResource | undefined, type: string): Condition | undefined => r?.status?.conditions?.find((c) => c.type === type);

/** An example from crds/examples/, pointed at this run's MinIO and given a fresh bucket. */
async function example(file: string, edit: (spec: Record<string, any>) => void = () => {}): Promise<Record<string, any>> {
  const manifest = parse(await readFile(join(repoRoot, 'crds', 'examples', file), 'utf8'));
  if (manifest.spec.storage) {
    manifest.spec.storage.endpoint = minio.endpoint;
    manifest.spec.storage.bucket = `${manifest.spec.storage.bucket}-${suffix}`;
  }
  edit(manifest.spec);
  return manifest;
}

async function ready(type: ResourceType, name: string, timeoutMs = 90_000, namespace = NS): Promise<ServiceResource> {
  return waitFor(
    `${type.kind} ${name} to be Ready at its generation`,
    async () => {
      const r = await get<ServiceResource>(type, name, namespace);
      return r && r.status?.observedGeneration === r.metadata.generation && condition(r, 'Ready')?.status === 'True' ? r : undefined;
    },
    timeoutMs,
  );
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
  [plane, databaseUrl, bucket] = await Promise.all([
    startControlPlane({ dir: join(dir, 'plane'), controllers: true }),
    createTestDatabase('operator'),
    createTestBucket('operator'),
  ]);
  admin = await adminClient(plane.kubeconfig);
  // The Prometheus Operator's ServiceMonitor CRD (schema-less stand-in): the operator adds ServiceMonitors when it exists.
  await kubectl(
    plane.kubeconfig,
    ['apply', '-f', '-'],
    stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'servicemonitors.monitoring.coreos.com' },
      spec: {
        group: 'monitoring.coreos.com',
        scope: 'Namespaced',
        names: { kind: 'ServiceMonitor', listKind: 'ServiceMonitorList', plural: 'servicemonitors', singular: 'servicemonitor' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    }),
  );
  await kubectl(plane.kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/servicemonitors.monitoring.coreos.com']);
  // As a platform team installs it: Prometheus's ServiceAccount listed as a metrics reader.
  const user = await installChartRbac(plane.kubeconfig, 'boxyard-system', [
    'metrics.readers[0].name=prometheus',
    'metrics.readers[0].namespace=boxyard-system',
  ]);
  operatorUser = user;
  for (const account of ['prometheus', 'stranger']) await kubectl(plane.kubeconfig, ['create', 'serviceaccount', account, '-n', 'boxyard-system']);
  tokens.reader = (await kubectl(plane.kubeconfig, ['create', 'token', 'prometheus', '-n', 'boxyard-system'])).trim();
  tokens.stranger = (await kubectl(plane.kubeconfig, ['create', 'token', 'stranger', '-n', 'boxyard-system'])).trim();
  const kubeconfig = await impersonatingKubeconfig(plane.kubeconfig, user, join(dir, 'operator-kubeconfig'));
  await kubectl(plane.kubeconfig, ['create', 'namespace', NS]);
  await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'db', '-n', NS, `--from-literal=url=${databaseUrl}`]);
  await kubectl(plane.kubeconfig, [
    'create',
    'secret',
    'generic',
    's3',
    '-n',
    NS,
    `--from-literal=accessKey=${minio.accessKey}`,
    `--from-literal=secretKey=${minio.secretKey}`,
  ]);
  // As the chart runs it (leader election on), with a short resync so the steady-state check sees several rounds.
  operator = await startOperatorProcess({
    kubeconfig,
    logFile: join(dir, 'operator.log'),
    args: [
      '--leader-elect',
      '--leader-election-namespace',
      'boxyard-system',
      '--leader-election-id',
      'boxyard',
      '--resync-period',
      '3',
      '--default-image',
      'registry.invalid/boxyard:test',
      '--allowed-images',
      'registry.invalid/boxyard',
    ],
    metricsToken: tokens.reader,
  });
}, 180_000);

afterAll(async () => {
  if (operator && process.env.BOXYARD_TEST_VERBOSE) console.log(operator.log());
  await operator?.stop();
  await plane?.stop();
  admin?.close();
  if (!process.env.BOXYARD_KEEP_TEST_DIR) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("the operator under the chart's RBAC", { timeout: 150_000 }, () => {
  it('turns each kind into its children and reports Ready when the Deployment is Available', async () => {
    await apply(await example('box-repository.yaml'));
    await apply(await example('file-share.yaml'));
    await apply(await example('terminal-pool.yaml', (spec) => (spec.deletionPolicy = 'Retain')));
    const [boxes, files, shells] = await Promise.all([
      ready(resources.boxRepository, 'boxes'),
      ready(resources.fileShare, 'files'),
      ready(resources.terminalPool, 'shells'),
    ]);

    // BoxRepository: two replicas behind an Ingress with TLS.
    expect(boxes.status).toMatchObject({ url: 'https://boxes.example.com', replicas: 2, readyReplicas: 2 });
    // What it created is recorded with where it created it (deletionPolicy Delete removes only that).
    expect(boxes.status?.storage?.createdBuckets).toEqual([
      { endpoint: new URL(minio.endpoint).host, bucket: `vagrant-boxes-${suffix}`, accessKeyDigest: expect.stringMatching(/^[0-9a-f]{16}$/) },
    ]);
    expect(boxes.status?.database?.createdSchemas).toEqual([{ database: expect.stringMatching(/^127\.0\.0\.1:\d+\/operator_\w+$/), schema: 'box_repository' }]);
    expect(condition(boxes, 'Ready')).toMatchObject({ reason: 'Available', observedGeneration: boxes.metadata.generation });
    expect(condition(boxes, 'Stalled')?.status).toBe('False');
    const deployment = (await get(resources.deployment, 'boxes-box-repository')) as KubeObject & Record<string, any>;
    expect(deployment.spec.replicas).toBe(2);
    const container = deployment.spec.template.spec.containers[0];
    expect(container).toMatchObject({ image: 'registry.invalid/boxyard:test', args: ['serve', 'box-repository', '--config', '/etc/boxyard/config.yaml'] });
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(deployment.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'BoxRepository', name: 'boxes', uid: boxes.metadata.uid, controller: true }),
    ]);
    const ingress = (await get(resources.ingress, 'boxes-box-repository')) as KubeObject & Record<string, any>;
    expect(ingress.spec.tls).toEqual([{ hosts: ['boxes.example.com'], secretName: 'boxes-tls' }]);
    expect(await get(resources.podDisruptionBudget, 'boxes-box-repository')).toBeDefined();
    expect(await get(resources.networkPolicy, 'boxes-box-repository')).toBeDefined();
    const monitor = (await get(resources.serviceMonitor, 'boxes-box-repository')) as KubeObject & Record<string, any>;
    // Prometheus scrapes the metrics port, which the Service exposes and the Ingress never routes.
    expect(monitor.spec.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s' }]);
    const boxesService = (await get(resources.service, 'boxes-box-repository')) as KubeObject & {
      spec: { ports: { name: string; port: number; targetPort: string }[] };
    };
    expect(boxesService.spec.ports).toContainEqual({ name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' });
    expect(JSON.stringify((await get(resources.ingress, 'boxes-box-repository')) as KubeObject)).not.toContain('metrics');
    const config = parse(
      ((await get(resources.configMap, 'boxes-box-repository-config')) as KubeObject & { data: Record<string, string> }).data['config.yaml']!,
    );
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
    // ...through the chart's ClusterRole, bound here by the operator, which holds no pod rights itself.
    expect(await get(resources.roleBinding, 'shells-terminal-gateway')).toMatchObject({ roleRef: { kind: 'ClusterRole', name: 'boxyard-terminal-gateway' } });
    expect(await get(resources.role, 'shells-terminal')).toBeUndefined();
    expect((await kubectl(plane.kubeconfig, ['auth', 'can-i', 'create', 'pods', '-n', NS, `--as=${operatorUser}`]).catch(() => 'no')).trim()).toBe('no');
    // The session pods' NetworkPolicy gets the pool's egress (its name and the pool label come with the config).
    const shellsConfig = parse(
      ((await get(resources.configMap, 'shells-terminal-config')) as KubeObject & { data: Record<string, string> }).data['config.yaml']!,
    );
    expect(shellsConfig.backend.kubernetes).toMatchObject({ pool: 'shells', egress: {} });

    // What `kubectl get` shows a platform engineer.
    const table = await kubectl(plane.kubeconfig, ['get', 'boxrepositories', '-n', NS]);
    expect(table).toMatch(/NAME\s+READY\s+STATUS\s+REPLICAS\s+AVAILABLE\s+URL\s+AGE/);
    expect(table).toMatch(/boxes\s+True\s+Available\s+2\s+2\s+https:\/\/boxes\.example\.com/);
    await kubectl(plane.kubeconfig, [
      'wait',
      '--for=condition=Ready',
      '--timeout=10s',
      '-n',
      NS,
      'boxrepository/boxes',
      'fileshare/files',
      'terminalpool/shells',
    ]);
  });

  it('updates the children when the spec changes and reports the new generation', async () => {
    const before = (await get(resources.deployment, 'boxes-box-repository')) as KubeObject & Record<string, any>;
    const checksum = before.spec.template.metadata.annotations['boxyard.io/config-checksum'];
    await kubectl(plane.kubeconfig, [
      'patch',
      'boxrepository',
      'boxes',
      '-n',
      NS,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { replicas: 1, uploads: { maxBytes: 1073741824 }, monitoring: { serviceMonitor: { enabled: false } } } }),
    ]);
    const boxes = await ready(resources.boxRepository, 'boxes');
    expect(boxes.metadata.generation).toBe(2);
    const after = (await get(resources.deployment, 'boxes-box-repository')) as KubeObject & Record<string, any>;
    expect(after.spec.replicas).toBe(1);
    expect(after.spec.template.metadata.annotations['boxyard.io/config-checksum']).not.toBe(checksum); // pods roll onto the new config
    const config = parse(
      ((await get(resources.configMap, 'boxes-box-repository-config')) as KubeObject & { data: Record<string, string> }).data['config.yaml']!,
    );
    expect(config.uploads.max_bytes).toBe(1073741824);
    await waitFor(
      'the PodDisruptionBudget to go with one replica',
      async () => (await get(resources.podDisruptionBudget, 'boxes-box-repository')) === undefined,
    );
    expect(await get(resources.serviceMonitor, 'boxes-box-repository')).toBeUndefined();
    expect(boxes.status).toMatchObject({ replicas: 1, readyReplicas: 1 });
  });

  it('reports Stalled with an actionable reason for a bad database Secret, and recovers once it is fixed', async () => {
    const wrong = new URL(databaseUrl);
    wrong.password = 'not-the-password';
    await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'bad-db', '-n', NS, `--from-literal=url=${wrong}`]);
    await apply(
      await example('file-share.yaml', (spec) => {
        spec.database = { secretRef: { name: 'bad-db' }, schema: 'broken_share' };
        spec.storage.prefix = 'broken';
      }).then((m) => ({ ...m, metadata: { name: 'broken' } })),
    );
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
    expect((JSON.parse(events) as { items: { type: string; reason: string }[] }).items).toContainEqual(
      expect.objectContaining({ type: 'Warning', reason: 'DatabaseAuthenticationFailed' }),
    );
    const missing = await waitFor('a missing Secret to be reported', async () => {
      await kubectl(plane.kubeconfig, [
        'patch',
        'fileshare',
        'broken',
        '-n',
        NS,
        '--type=merge',
        '-p',
        '{"spec":{"database":{"secretRef":{"name":"nowhere"}}}}',
      ]);
      const r = await get<ServiceResource>(resources.fileShare, 'broken');
      return condition(r, 'Stalled')?.reason === 'SecretNotFound' ? r : undefined;
    });
    expect(condition(missing, 'Stalled')?.message).toMatch(/Secret "nowhere" \(spec\.database\.secretRef\) does not exist in namespace "apps"/);

    // Fixing the Secret is noticed through the Secret's own watch event, not only on resync.
    await kubectl(plane.kubeconfig, ['patch', 'fileshare', 'broken', '-n', NS, '--type=merge', '-p', '{"spec":{"database":{"secretRef":{"name":"bad-db"}}}}']);
    await kubectl(plane.kubeconfig, [
      'create',
      'secret',
      'generic',
      'bad-db',
      '-n',
      NS,
      `--from-literal=url=${databaseUrl}`,
      '--dry-run=client',
      '-o',
      'yaml',
    ]).then((yaml) => kubectl(plane.kubeconfig, ['replace', '-f', '-'], yaml));
    await ready(resources.fileShare, 'broken');
  });

  it('with deletionPolicy Delete drops the schema and the stored objects before letting the resource go', async () => {
    // A FileShare in a bucket it shares with others (its prefix only), a BoxRepository in a bucket it created.
    const shared = bucket.bucket;
    await apply(
      await example('file-share.yaml', (spec) => {
        spec.storage = { endpoint: minio.endpoint, bucket: shared, prefix: 'scratch', credentialsSecretRef: { name: 's3' }, createBucket: false };
        spec.database = { secretRef: { name: 'db' }, schema: 'scratch_share' };
        spec.deletionPolicy = 'Delete';
      }).then((m) => ({ ...m, metadata: { name: 'scratch' } })),
    );
    await apply(
      await example('box-repository.yaml', (spec) => {
        spec.storage.bucket = `temp-${suffix}`;
        spec.database = { secretRef: { name: 'db' }, schema: 'temp_boxes' };
        spec.deletionPolicy = 'Delete';
        spec.replicas = 1;
        delete spec.ingress;
      }).then((m) => ({ ...m, metadata: { name: 'temp' } })),
    );
    await Promise.all([ready(resources.fileShare, 'scratch'), ready(resources.boxRepository, 'temp')]);
    // What the services would have written.
    await query(
      'create schema if not exists scratch_share; create table scratch_share.files (id int); create schema if not exists temp_boxes; create table temp_boxes.boxes (id int)',
    );
    for (const key of ['scratch/a.txt', 'scratch/dir/b.txt', 'other/keep.txt']) await bucket.client.putObject(shared, key, Buffer.from(key));
    await bucket.client.putObject(`temp-${suffix}`, 'boxes/x.box', Buffer.from('box'));

    await kubectl(plane.kubeconfig, ['delete', 'fileshare/scratch', 'boxrepository/temp', '-n', NS, '--wait=true', '--timeout=90s']);
    expect(await schemaExists('scratch_share')).toBe(false);
    expect(await schemaExists('temp_boxes')).toBe(false);
    expect(await objectNames(shared)).toEqual(['other/keep.txt']); // only the prefix went
    expect(await bucket.client.bucketExists(`temp-${suffix}`)).toBe(false); // the bucket it created went too
    expect(await get(resources.fileShare, 'scratch')).toBeUndefined(); // the finalizer was removed
  });

  it('refuses deletionPolicy Delete of data it did not create alone, and deletes nothing', async () => {
    const shared = bucket.bucket;
    await kubectl(plane.kubeconfig, ['create', 'namespace', 'apps2']);
    await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'db', '-n', 'apps2', `--from-literal=url=${databaseUrl}`]);
    const share = (name: string, schema: string, prefix: string, bucketName = shared) =>
      example('file-share.yaml', (spec) => {
        spec.storage = { endpoint: minio.endpoint, bucket: bucketName, prefix, credentialsSecretRef: { name: 's3' }, createBucket: false };
        spec.database = { secretRef: { name: 'db' }, schema };
        spec.deletionPolicy = 'Delete';
        delete spec.ingress;
      }).then((m) => ({ ...m, metadata: { name } }));
    // A schema another resource (another kind, another namespace, the same database) uses; an empty prefix in a
    // bucket the operator did not create; the public schema.
    await apply(await share('dup', 'dup_schema', 'dup'));
    await kubectl(
      plane.kubeconfig,
      ['apply', '-n', 'apps2', '-f', '-'],
      stringify(
        await example('terminal-pool.yaml', (spec) => {
          spec.database = { secretRef: { name: 'db' }, schema: 'dup_schema' };
          spec.deletionPolicy = 'Retain';
          delete spec.ingress;
        }).then((m) => ({ ...m, metadata: { name: 'twin' } })),
      ),
    );
    const whole = `whole-${suffix}`; // a bucket someone else made (and filled)
    await bucket.client.makeBucket(whole);
    await bucket.client.putObject(whole, 'not-boxyards.txt', Buffer.from('x'));
    await apply(await share('whole', 'whole_share', '', whole));
    await apply(await share('pub', 'public', 'pub'));
    await Promise.all([
      ready(resources.fileShare, 'dup'),
      ready(resources.fileShare, 'whole'),
      ready(resources.fileShare, 'pub'),
      ready(resources.terminalPool, 'twin', 90_000, 'apps2'),
    ]);
    await query(
      'create schema if not exists dup_schema; create table dup_schema.sessions (id int); create table if not exists public.keep_me (id int); create schema if not exists whole_share; create table whole_share.files (id int)',
    );
    for (const key of ['dup/a.txt', 'pub/b.txt', 'elsewhere/c.txt']) await bucket.client.putObject(shared, key, Buffer.from(key));
    const before = await objectNames(shared);

    await kubectl(plane.kubeconfig, ['delete', 'fileshare/dup', 'fileshare/whole', 'fileshare/pub', '-n', NS, '--wait=false']);
    const refused = async (name: string) =>
      waitFor(`the deletion of ${name} to be refused`, async () => {
        const r = await get<ServiceResource>(resources.fileShare, name);
        return condition(r, 'Stalled')?.reason === 'DeletionRefused' ? condition(r, 'Stalled')!.message : undefined;
      });
    expect(await refused('dup')).toMatch(
      /^Deletion blocked: deletionPolicy Delete refused: TerminalPool apps2\/twin uses the same schema "dup_schema" in the same database\. Nothing was deleted; set spec\.deletionPolicy: Retain/,
    );
    expect(await refused('whole')).toMatch(/spec\.storage\.prefix is empty, so the data is the whole bucket "[^"]+", which the operator did not create/);
    expect(await refused('pub')).toMatch(/the schema "public" is not the service's own/);
    // Nothing dropped: schemas, tables, objects, and the running Deployments.
    expect(await schemaExists('dup_schema')).toBe(true);
    expect(await schemaExists('whole_share')).toBe(true);
    expect(await query('select 1 from public.keep_me')).toEqual([]);
    expect(await objectNames(shared)).toEqual(before);
    expect(await objectNames(whole)).toEqual(['not-boxyards.txt']);
    for (const name of ['dup', 'whole', 'pub']) expect(await get(resources.deployment, `${name}-file-share`), name).toBeDefined();
    const events = JSON.parse(await kubectl(plane.kubeconfig, ['get', 'events', '-n', NS, '--field-selector=involvedObject.name=whole', '-o', 'json'])) as {
      items: { reason: string }[];
    };
    expect(events.items.map((e) => e.reason)).toContain('DeletionRefused');

    // Retain finishes the deletions, keeping the data.
    for (const name of ['dup', 'whole', 'pub'])
      await kubectl(plane.kubeconfig, ['patch', 'fileshare', name, '-n', NS, '--type=merge', '-p', '{"spec":{"deletionPolicy":"Retain"}}']);
    for (const name of ['dup', 'whole', 'pub']) await waitFor(`${name} to go`, async () => (await get(resources.fileShare, name)) === undefined);
    expect(await schemaExists('dup_schema')).toBe(true);
    expect(await objectNames(shared)).toEqual(before);
    // The peer goes before the test ends: its finalization would otherwise write while a later test measures.
    await kubectl(plane.kubeconfig, ['delete', 'terminalpool', 'twin', '-n', 'apps2', '--wait=false']);
    await waitFor('TerminalPool apps2/twin to go', async () => (await get(resources.terminalPool, 'twin', 'apps2')) === undefined);
    await kubectl(plane.kubeconfig, ['delete', 'namespace', 'apps2', '--wait=false']);
  });

  it('with deletionPolicy Delete removes only what it created, where it created it: not what it moved to or adopted', async () => {
    // A second object store and a second database, both holding things someone else made before.
    const other = await startMinio({ dir: join(dir, 'minio-b'), accessKey: 'second-admin', secretKey: randomBytes(12).toString('hex') });
    try {
      const otherUrl = await createTestDatabase('operator_b');
      const name = `moved-${suffix}`;
      const otherClient = (await createTestBucket('unused', other)).client;
      await otherClient.makeBucket(name, 'us-east-1'); // someone else's (empty) bucket of the same name
      const otherDb = new pg.Client({ connectionString: otherUrl });
      await otherDb.connect();
      await otherDb.query('create schema moved_share; create table moved_share.ledger (id int); insert into moved_share.ledger values (42)');
      await otherDb.end();
      await kubectl(plane.kubeconfig, ['create', 'secret', 'generic', 'db-b', '-n', NS, `--from-literal=url=${otherUrl}`]);
      await kubectl(plane.kubeconfig, [
        'create',
        'secret',
        'generic',
        's3-b',
        '-n',
        NS,
        `--from-literal=accessKey=${other.accessKey}`,
        `--from-literal=secretKey=${other.secretKey}`,
      ]);

      // Created here: the bucket on the first MinIO and the schema in the first database.
      await apply(
        await example('file-share.yaml', (spec) => {
          spec.storage = { endpoint: minio.endpoint, bucket: name, prefix: 'moved', credentialsSecretRef: { name: 's3' }, createBucket: true };
          spec.database = { secretRef: { name: 'db' }, schema: 'moved_share' };
          spec.deletionPolicy = 'Delete';
          delete spec.ingress;
        }).then((m) => ({ ...m, metadata: { name: 'moved' } })),
      );
      await ready(resources.fileShare, 'moved');
      expect(await bucket.client.bucketExists(name)).toBe(true);
      await query('create schema if not exists moved_share; create table moved_share.files (id int)'); // what the service would have written

      // Moved to the second MinIO and the second database, where both already exist: adopted, not created.
      await kubectl(plane.kubeconfig, [
        'patch',
        'fileshare',
        'moved',
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({
          spec: { storage: { endpoint: other.endpoint, credentialsSecretRef: { name: 's3-b' } }, database: { secretRef: { name: 'db-b' } } },
        }),
      ]);
      await ready(resources.fileShare, 'moved');
      await otherClient.putObject(name, 'moved/written-after-the-move.txt', Buffer.from('x'));

      await kubectl(plane.kubeconfig, ['delete', 'fileshare/moved', '-n', NS, '--wait=true', '--timeout=90s']);
      // The adopted bucket and schema stay (the stored objects under the prefix are the resource's and go).
      expect(await otherClient.bucketExists(name)).toBe(true);
      const check = new pg.Client({ connectionString: otherUrl });
      await check.connect();
      expect((await check.query('select id from moved_share.ledger')).rows).toEqual([{ id: 42 }]);
      await check.end();
      // What it created stays where it was created too: the spec no longer says how to reach it.
      expect(await bucket.client.bucketExists(name)).toBe(true);
      expect(await schemaExists('moved_share')).toBe(true);
      const events = JSON.parse(
        await kubectl(plane.kubeconfig, ['get', 'events', '-n', NS, '--field-selector=involvedObject.name=moved,reason=DataDeleted', '-o', 'json']),
      ) as { items: { message: string }[] };
      expect(events.items.at(-1)?.message).toMatch(/kept the schema "moved_share" .*it existed before/i);
      expect(events.items.at(-1)?.message).toMatch(/kept the bucket "moved-[^"]+" .*it existed before/i);
    } finally {
      await other.stop();
    }
  });

  it('refuses an image that is not on the allow-list: ImageNotAllowed, nothing created or changed', async () => {
    await apply(
      await example('file-share.yaml', (spec) => {
        spec.image = 'docker.io/attacker/exfiltrate:1';
        spec.storage.prefix = 'rogue';
        spec.database = { secretRef: { name: 'db' }, schema: 'rogue_share' };
      }).then((m) => ({ ...m, metadata: { name: 'rogue' } })),
    );
    const rogue = await waitFor('FileShare rogue to be refused', async () => {
      const r = await get<ServiceResource>(resources.fileShare, 'rogue');
      return condition(r, 'Ready')?.reason === 'ImageNotAllowed' ? r : undefined;
    });
    expect(condition(rogue, 'Ready')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(
        /^spec\.image "docker\.io\/attacker\/exfiltrate:1" is not on the operator's image allow-list \(registry\.invalid\/boxyard, registry\.invalid\/boxyard:test\)/,
      ),
    });
    expect(condition(rogue, 'Stalled')?.status).toBe('True');
    for (const type of [resources.deployment, resources.configMap, resources.service])
      expect(await get(type, type === resources.configMap ? 'rogue-file-share-config' : 'rogue-file-share')).toBeUndefined();
    expect(await get(resources.secret, 'rogue-file-share-session')).toBeUndefined(); // no Secret generated either
    expect(rogue.metadata.finalizers ?? []).toEqual([]); // and no finalizer: deleting it touches no data

    // A running pool whose session image is changed to one not allowed: stalled, its gateway left as it was.
    const config = async () =>
      ((await get(resources.configMap, 'shells-terminal-config')) as KubeObject & { data: Record<string, string> }).data['config.yaml'];
    const deployment = async () => (await get(resources.deployment, 'shells-terminal'))!.metadata.generation;
    const [configBefore, generationBefore] = [await config(), await deployment()];
    await kubectl(plane.kubeconfig, ['patch', 'terminalpool', 'shells', '-n', NS, '--type=merge', '-p', '{"spec":{"sessionPod":{"image":"busybox:latest"}}}']);
    const shells = await waitFor('TerminalPool shells to be refused', async () => {
      const r = await get<ServiceResource>(resources.terminalPool, 'shells');
      return condition(r, 'Ready')?.reason === 'ImageNotAllowed' && r?.status?.observedGeneration === r?.metadata.generation ? r : undefined;
    });
    expect(condition(shells, 'Ready')?.message).toMatch(/^spec\.sessionPod\.image "busybox:latest" is not on/);
    expect(await config()).toBe(configBefore);
    expect(await deployment()).toBe(generationBefore);
    await kubectl(plane.kubeconfig, ['patch', 'terminalpool', 'shells', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/sessionPod/image"}]']);
    await ready(resources.terminalPool, 'shells');
    await kubectl(plane.kubeconfig, ['delete', 'fileshare', 'rogue', '-n', NS, '--wait=true', '--timeout=30s']);
  });

  it('serves /metrics only to a token the apiserver accepts of a user allowed to get /metrics; health stays open', async () => {
    const url = `http://127.0.0.1:${operator.port}`;
    const metrics = (token?: string) => fetch(`${url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const anonymous = await metrics();
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await metrics('not-a-token')).status).toBe(401);
    const stranger = await metrics(tokens.stranger);
    expect(stranger.status).toBe(403);
    expect(await stranger.text()).toContain('system:serviceaccount:boxyard-system:stranger may not get /metrics');
    const reader = await metrics(tokens.reader);
    expect(reader.status).toBe(200);
    expect(await reader.text()).toContain('controller_runtime_reconcile_total');
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await fetch(`${url}/health/ready`)).status).toBe(200);
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
    await waitFor(
      'the pause to show in the status',
      async () => condition(await get<ServiceResource>(resources.terminalPool, 'shells'), 'Reconciling')?.reason === 'Paused',
    );
    const pausedBefore = metricSum(
      await operator.metrics(),
      'controller_runtime_reconcile_total',
      (l) => l.controller === 'terminalpools' && l.result === 'paused',
    );
    await kubectl(plane.kubeconfig, ['patch', 'terminalpool/shells', '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":3}}']);
    // The operator saw the change (and skipped it): more paused reconciles, and the Deployment is untouched.
    await waitFor(
      'a paused reconcile after the change',
      async () =>
        metricSum(await operator.metrics(), 'controller_runtime_reconcile_total', (l) => l.controller === 'terminalpools' && l.result === 'paused') >=
        pausedBefore + 2,
    );
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
    const reconciles = async () => metricSum(await operator.metrics(), 'controller_runtime_reconcile_total', (l) => l.result === 'success');
    let writes = writesOf(await operator.metrics());
    await waitFor(
      'writes to settle',
      async () => {
        const now = writesOf(await operator.metrics());
        const settled = now === writes;
        writes = now;
        return settled;
      },
      30_000,
      2000,
    );
    const start = await reconciles();
    await waitFor('two resync rounds over every resource', async () => (await reconciles()) >= start + 2 * all.length, 30_000, 500);
    expect(writesOf(await operator.metrics())).toBe(writes);
    expect(metricSum(await operator.metrics(), 'boxyard_operator_api_requests_total', (l) => l.code === '403')).toBe(0); // the chart's RBAC sufficed
  });
});
