// What the step tests on the fake client start from: resources as the apiserver hands them (every CRD default
// filled in), the Secrets they reference, the step inputs wired to a FakeKubeClient, and recording stand-ins for
// PostgreSQL and S3 (their real behaviour is tested against real servers in operator/test).
import type { BoxRepositorySpec, ServiceResource, TerminalPoolSpec } from '../../crds/types.ts';
import { desiredState, type DesiredState } from '../../desired/index.ts';
import { kindNamed, type KindInfo } from '../../desired/kinds.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import type { DataStores } from './data-stores.ts';
import { FakeEvents, FakeKubeClient } from './fake-client.ts';
import type { ObjectCache } from './step-inputs.ts';

const common = {
  replicas: 1,
  terminationGracePeriodSeconds: 600,
  imagePullPolicy: 'IfNotPresent' as const,
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
  logging: { level: 'info' as const },
  auth: { sessionTTLSeconds: 3600, adminUsername: 'admin' },
  rateLimiting: { enabled: true, maxRequests: 100, windowSeconds: 600 },
  networkPolicy: { enabled: true },
  monitoring: { serviceMonitor: { enabled: false, interval: '30s' }, tracing: { enabled: true } },
  deletionPolicy: 'Retain' as const,
};

/** A BoxRepository `boxes` in namespace `team` (database Secret `db`, storage Secret `s3`). */
export function boxes(over: Partial<BoxRepositorySpec> = {}, meta: Partial<ServiceResource['metadata']> = {}): ServiceResource {
  const spec: BoxRepositorySpec = {
    ...common,
    database: { secretRef: { name: 'db', key: 'url' }, schema: 'box_repository', poolSize: 10 },
    storage: {
      endpoint: 'http://minio.storage.svc:9000',
      bucket: 'boxes',
      region: 'us-east-1',
      prefix: 'team',
      credentialsSecretRef: { name: 's3', accessKeyKey: 'accessKey', secretKeyKey: 'secretKey' },
      createBucket: true,
    },
    uploads: { maxBytes: 10 * 1024 ** 3, stallTimeoutSeconds: 60 },
    downloadLinks: { ttlSeconds: 300 },
    signUp: 'invited',
    rateLimiting: {
      enabled: true,
      maxRequests: 1000,
      windowSeconds: 900,
      fileOperationsMaxRequests: 100,
      downloadMaxRequests: 1000,
      downloadLinkMaxRequests: 300,
      architectureOperationsMaxRequests: 300,
    },
    ...over,
  };
  return { apiVersion: 'boxyard.io/v1alpha1', kind: 'BoxRepository', metadata: { name: 'boxes', namespace: 'team', generation: 1, ...meta }, spec };
}

/** A TerminalPool `shells` in namespace `team` (no storage). */
export function shells(over: Partial<TerminalPoolSpec> = {}): ServiceResource {
  const spec: TerminalPoolSpec = {
    ...common,
    database: { secretRef: { name: 'db', key: 'url' }, schema: 'terminal', poolSize: 10 },
    sessionPod: { imagePullPolicy: 'IfNotPresent', shell: '/bin/bash', resources: {}, readyTimeoutSeconds: 60, egress: { clusterDNS: true, internet: true } },
    sessions: { idleTimeoutSeconds: 1800, maxLifetimeSeconds: 28800, reattachGraceSeconds: 300, perUserLimit: 3, globalLimit: 100, scrollbackBytes: 1048576 },
    recording: { mode: 'off', input: false, retentionDays: 30, maxBytes: 268435456 },
    ...over,
  };
  return { apiVersion: 'boxyard.io/v1alpha1', kind: 'TerminalPool', metadata: { name: 'shells', namespace: 'team', generation: 1 }, spec };
}

/** The kinds the step tests use, as the registry declares them. */
export const boxRepository = kindNamed('BoxRepository');
export const terminalPool = kindNamed('TerminalPool');

export type SecretObject = KubeObject & { data: Record<string, string> };

/** A Secret with `values` (stored base64, as the apiserver does). */
export function secret(name: string, values: Record<string, string>, namespace = 'team'): SecretObject {
  const data = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', data };
}

export const DATABASE_URL = 'postgres://boxyard:pw@postgres.team.svc:5432/boxyard';

/** The child types the operator caches (operator.ts), each behind a managed-by label selector. */
const CACHED_CHILDREN = [
  resources.deployment,
  resources.service,
  resources.configMap,
  resources.serviceAccount,
  resources.roleBinding,
  resources.ingress,
  resources.networkPolicy,
  resources.podDisruptionBudget,
];

/** Stand-ins for PostgreSQL and S3 that record what was asked; `created` says what the next check reports created. */
export function fakeDataStores(created: { schema?: boolean; bucket?: boolean } = {}): DataStores & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    checkDatabase: async (_url, schema) => (calls.push(`checkDatabase ${schema}`), { created: !!created.schema }),
    checkBucket: async (target) => (calls.push(`checkBucket ${target.bucket}`), { created: !!created.bucket }),
    dropSchema: async (_url, schema) => void calls.push(`dropSchema ${schema}`),
    deleteObjects: async (target) => (calls.push(`deleteObjects ${target.bucket}/${target.prefix}`), 3),
    deleteBucket: async (target) => void calls.push(`deleteBucket ${target.bucket}`),
  };
}

/** Everything a step may take, wired to one fake client; each step picks what its input type names. */
export function fakeWorld(kind: KindInfo = boxRepository, options: { serviceMonitors?: boolean; created?: { schema?: boolean; bucket?: boolean } } = {}) {
  const client = new FakeKubeClient();
  const children = new Map<string, ObjectCache>(CACHED_CHILDREN.map((t) => [t.plural, client.cache(t, { managedOnly: true })]));
  const peers: ServiceResource[] = [];
  return {
    client,
    kind,
    events: new FakeEvents(),
    secrets: client.cache(resources.secret, { metadataOnly: true }),
    children,
    dataStores: fakeDataStores(options.created),
    /** Other resources the operator watches; add to it. */
    peers: () => peers,
    peerList: peers,
    serviceMonitorAvailable: async () => !!options.serviceMonitors,
  };
}

export type FakeWorld = ReturnType<typeof fakeWorld>;

/** The desired state of `resource` as the reconciler computes it. */
export function desiredFor(world: FakeWorld, resource: ServiceResource, serviceMonitorAvailable = false): DesiredState {
  return desiredState({ kind: world.kind, resource, defaultImage: 'ghcr.io/boxyard/boxyard:0.1.0', serviceMonitorAvailable, secretDigest: 'digest' });
}
