// The operator's rendered config.yaml against each service's own config loader (issue 10): for every example in
// crds/examples/ and for a resource that sets every field of the spec, the real kube-apiserver fills in the CRD
// defaults (server-side dry run), the operator renders the config, and the service's strict schema loads it with
// the secret files where the pod mounts them. A spec option that the service refuses would crash-loop its pods.
// A new spec field fails here until the "every field" resources set it.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { z } from 'zod';
import { kinds as clusterKinds } from '@boxyard/registry/kinds.ts';
import { desiredState } from '@boxyard/operator/desired/index.ts';
import { loadAsPod } from '@boxyard/operator/desired/pod-config.ts';
import { allKinds, type KindInfo } from '@boxyard/operator/desired/kinds.ts';
import type { ServiceResource } from '@boxyard/operator/crds/types.ts';
import { kubectlFor } from '../harness/clients.ts';

const root = new URL('../../', import.meta.url).pathname;
// Each kind's service config schema, as its kind.ts declares it (the registry's list).
const serviceSchemas: Record<string, z.ZodType> = Object.fromEntries(clusterKinds.map((k) => [k.kind, k.configSchema]));

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const merge = (base: Json, over: Json): Json =>
  Object.fromEntries(
    [...new Set([...Object.keys(base), ...Object.keys(over)])].map((k) => [
      k,
      isObject(base[k]) && isObject(over[k]) ? merge(base[k], over[k]) : (over[k] ?? base[k]),
    ]),
  );

// Every optional field of the spec, with values a platform team could write.
const everyCommonField: Json = {
  replicas: 3,
  terminationGracePeriodSeconds: 1800,
  image: 'registry.example/boxyard:2.0',
  imagePullPolicy: 'Always',
  imagePullSecrets: [{ name: 'registry' }],
  resources: { requests: { cpu: '200m', memory: '256Mi' }, limits: { cpu: '2', memory: '1Gi' } },
  podAnnotations: { 'example.com/team': 'platform' },
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'boxyard', effect: 'NoSchedule' }],
  affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } },
  logging: { level: 'debug' },
  database: { secretRef: { name: 'db', key: 'url' }, schema: 'custom_schema', poolSize: 20 },
  auth: {
    sessionSecretRef: { name: 'session', key: 'secret' },
    sessionTTLSeconds: 7200,
    adminUsername: 'root-admin',
    adminPasswordSecretRef: { name: 'admin', key: 'password' },
    oidc: { issuer: 'https://idp.example.com/realms/acme', audience: 'https://svc.example.com', dpop: { required: true, proofMaxAgeSeconds: 120 } },
  },
  publicURL: 'https://svc.example.com',
  ingress: {
    host: 'svc.example.com',
    className: 'traefik',
    path: '/',
    annotations: { 'cert-manager.io/cluster-issuer': 'letsencrypt' },
    tls: { secretName: 'svc-tls' },
  },
  rateLimiting: { enabled: false, maxRequests: 500, windowSeconds: 60 },
  networkPolicy: { enabled: true, from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } }] },
  monitoring: {
    serviceMonitor: { enabled: true, interval: '15s' },
    tracing: { enabled: true, endpoint: 'http://otel-collector.observability:4318', sampleRatio: 0.2 },
  },
  deletionPolicy: 'Delete',
  bootstrap: { fromBackup: { name: 'nightly-202611270300' } }, // the operator's own step (operator/src/backups/bootstrap.ts), no config key
};
const everyStorageField: Json = {
  storage: {
    endpoint: 'https://s3.example.com',
    bucket: 'everything',
    region: 'eu-west-1',
    prefix: 'team-z',
    credentialsSecretRef: { name: 's3', accessKeyKey: 'ak', secretKeyKey: 'sk' },
    createBucket: false,
  },
};
const everyKindField: Record<string, Json> = {
  BoxRepository: {
    ...everyStorageField,
    uploads: { maxBytes: 1073741824, stallTimeoutSeconds: 30 },
    downloadLinks: { ttlSeconds: 600 },
    signUp: 'open',
    rateLimiting: { fileOperationsMaxRequests: 50, downloadMaxRequests: 2000, downloadLinkMaxRequests: 100, architectureOperationsMaxRequests: 200 },
  },
  FileShare: {
    ...everyStorageField,
    uploads: { maxBytes: 1073741824 },
    events: { heartbeatSeconds: 30, retentionHours: 48 },
    shares: { defaultExpirySeconds: 86400, maxExpirySeconds: 604800 },
  },
  TerminalPool: {
    ...everyStorageField,
    sessionPod: {
      image: 'registry.example/shell:1',
      imagePullPolicy: 'Always',
      shell: '/bin/zsh',
      resources: { requests: { cpu: '10m' }, limits: { memory: '256Mi' } },
      readyTimeoutSeconds: 90,
      home: { size: '2Gi', storageClassName: 'fast-ssd', accessMode: 'ReadWriteMany', mountPath: '/workspace' },
      egress: {
        clusterDNS: false,
        internet: true,
        excludedCIDRs: ['203.0.113.0/24', '2001:db8::/32'],
        allow: [{ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'mirror' } } }], ports: [{ protocol: 'TCP', port: 443 }] }],
      },
    },
    sessions: { idleTimeoutSeconds: 600, maxLifetimeSeconds: 3600, reattachGraceSeconds: 60, perUserLimit: 5, globalLimit: 50, scrollbackBytes: 65536 },
    allowedOrigins: ['https://portal.example.com'],
    recording: { mode: 'required', input: true, retentionDays: 7, maxBytes: 104857600 },
  },
};

/** Leaf paths of a structural schema: objects with `properties` recurse; everything else is a field to set. */
function leafPaths(schema: Json, prefix = ''): string[] {
  const properties = schema.properties as Record<string, Json> | undefined;
  if (!properties || schema['x-kubernetes-preserve-unknown-fields']) return [prefix];
  return Object.entries(properties).flatMap(([name, child]) => leafPaths(child, prefix ? `${prefix}.${name}` : name));
}
const has = (value: unknown, path: string) => path.split('.').reduce<unknown>((v, k) => (isObject(v) ? v[k] : undefined), value) !== undefined;

interface Crd {
  spec: { names: { kind: string }; versions: { schema: { openAPIV3Schema: { properties: { spec: Json } } } }[] };
}
const crdOf = (kind: string): Crd =>
  readdirSync(join(root, 'crds'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => parse(readFileSync(join(root, 'crds', f), 'utf8')) as Crd)
    .find((crd) => crd.spec.names.kind === kind)!;

const examples = readdirSync(join(root, 'crds', 'examples'))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => ({ file: f, resource: parse(readFileSync(join(root, 'crds', 'examples', f), 'utf8')) as Json & { kind: string; spec: Json } }));

describe('the operator renders only config the services load', () => {
  const kubectl = kubectlFor(inject('kubeconfig'));
  const dir = mkdtempSync(join(tmpdir(), 'boxyard-contract-'));
  const crdFiles = readdirSync(join(root, 'crds'))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => ['-f', join(root, 'crds', f)]);
  beforeAll(async () => {
    await kubectl(['apply', '--server-side', '--force-conflicts', ...crdFiles]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crdFiles]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** What the operator reads: the resource with every CRD default filled in by the apiserver (nothing stored). */
  const defaulted = async (resource: Json) =>
    JSON.parse(await kubectl(['create', '--dry-run=server', '-n', 'default', '-o', 'json', '-f', '-'], JSON.stringify(resource))) as ServiceResource;

  /** Loads config.yaml as the pod would: the secret files where the volume puts them, no environment. */
  const loadPodConfig = (kind: KindInfo, resource: ServiceResource): Json =>
    loadAsPod(
      desiredState({ kind, resource, defaultImage: 'registry.example/boxyard:1.0', serviceMonitorAvailable: true, secretDigest: 'd' }).configYaml,
      serviceSchemas[kind.kind]!,
      dir,
    );

  it('has an example for every kind', () => {
    expect(examples.map((e) => e.resource.kind).sort()).toEqual(allKinds.map((k) => k.kind).sort());
  });

  for (const { file, resource } of examples) {
    const kind = allKinds.find((k) => k.kind === resource.kind)!;

    it(`${file}: loads with ${kind.service}'s own schema`, async () => {
      const config = loadPodConfig(kind, await defaulted(resource));
      expect(config).toMatchObject({ database: { url: 'postgres://u:p@db:5432/boxyard' }, session: { secret: 'x'.repeat(64) } });
      expect((config.auth as Json | undefined)?.resource_server).toMatchObject({ enabled: false });
      // Self sign-up needs an invitation unless the resource opens it.
      if (resource.kind === 'BoxRepository') expect((config.auth as Json).sign_up).toBe('invited');
      // The service's own rate-limit defaults: the box repository's seed says 1000 per 15 minutes.
      expect(config.rate_limiting).toMatchObject(
        resource.kind === 'BoxRepository' ? { max_requests: 1000, window_seconds: 900, file_operations_max_requests: 100 } : { window_seconds: 600 },
      );
    });

    it(`${resource.kind} with every spec field set: loads, and the provider settings arrive`, async () => {
      const everything = {
        ...resource,
        metadata: { name: `every-${kind.service}` },
        spec: merge(merge(resource.spec, everyCommonField), everyKindField[resource.kind]!),
      };
      const fields = leafPaths(crdOf(resource.kind).spec.versions[0]!.schema.openAPIV3Schema.properties.spec);
      expect(fields.length).toBeGreaterThan(40);
      const unset = fields.filter((path) => !has(everything.spec, path));
      expect(unset, 'spec fields this test does not set yet').toEqual([]);
      const config = loadPodConfig(kind, await defaulted(everything));
      expect(config.auth).toMatchObject({
        resource_server: {
          enabled: true,
          issuer: 'https://idp.example.com/realms/acme',
          audience: 'https://svc.example.com',
          dpop: { required: true, proof_max_age_seconds: 120 },
        },
      });
      expect(config).toMatchObject({ logging: { level: 'debug' }, server: { public_url: 'https://svc.example.com' }, admin: { username: 'root-admin' } });
      // The kind's own auth key arrives beside the provider settings, not instead of them.
      if (resource.kind === 'BoxRepository') expect(config.auth).toMatchObject({ sign_up: 'open', resource_server: { enabled: true } });
      // The class ceilings arrive beside the common limit, not instead of it.
      if (resource.kind === 'BoxRepository') {
        expect(config.rate_limiting).toMatchObject({
          enabled: false,
          max_requests: 500,
          window_seconds: 60,
          file_operations_max_requests: 50,
          download_max_requests: 2000,
          download_link_max_requests: 100,
          architecture_operations_max_requests: 200,
        });
      }
      if (resource.kind === 'TerminalPool') {
        // The pool's recordings go to its bucket, not to the gateway pod's /tmp.
        expect(config.storage).toMatchObject({
          driver: 's3',
          endpoint: 'https://s3.example.com',
          bucket: 'everything',
          prefix: 'team-z',
          access_key: expect.any(String),
        });
        expect((config.backend as Json).kubernetes).toMatchObject({
          pool: `every-${kind.service}`,
          home: { size: '2Gi', storage_class: 'fast-ssd', access_mode: 'ReadWriteMany', mount_path: '/workspace' },
          egress: {
            cluster_dns: false,
            internet: true,
            excluded_cidrs: ['203.0.113.0/24', '2001:db8::/32'],
            allow: [{ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'mirror' } } }], ports: [{ protocol: 'TCP', port: 443 }] }],
          },
        });
      }
    });
  }
});
