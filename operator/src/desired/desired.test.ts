// The desired children are pure functions of the spec: checked here without a cluster. The generated config is
// also loaded with the kit's own loader and shared schemas, the way a service will read it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { databaseSchema, loggingSchema, metricsSchema, rateLimitSchema, serverSchema, sessionSchema, storageSchema } from '@boxyard/kit';
import type { BoxRepositorySpec, CommonSpec, FileShareSpec, ServiceResource, TerminalPoolSpec } from '../crds/types.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { CHECKSUM_ANNOTATION, SECRETS_DIR } from './common.ts';
import { loadAsPod } from './pod-config.ts';
import { desiredState, type DesiredInput } from './index.ts';
import { kindNamed, type KindInfo } from './kinds.ts';
import { desiredGeneratedSecrets, generateValues } from './secrets.ts';
import { tracingDefaultsFrom } from './tracing.ts';

const [boxRepository, fileShare, terminalPool] = ['BoxRepository', 'FileShare', 'TerminalPool'].map(kindNamed) as [KindInfo, KindInfo, KindInfo];

// Specs as the apiserver hands them to the operator: every CRD default filled in.
const common = {
  replicas: 1,
  terminationGracePeriodSeconds: 600,
  imagePullPolicy: 'IfNotPresent' as const,
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
  logging: { level: 'info' as const },
  auth: { sessionTTLSeconds: 3600, adminUsername: 'admin' },
  rateLimiting: { enabled: true, maxRequests: 100, windowSeconds: 600 },
  networkPolicy: { enabled: true },
  monitoring: { serviceMonitor: { enabled: true, interval: '30s' } } as CommonSpec['monitoring'], // tracing: the operator's defaults
  deletionPolicy: 'Retain' as const,
};
const storage = {
  endpoint: 'http://minio.storage.svc:9000',
  bucket: 'boxes',
  region: 'us-east-1',
  prefix: '',
  credentialsSecretRef: { name: 's3', accessKeyKey: 'accessKey', secretKeyKey: 'secretKey' },
  createBucket: true,
};

function resource<S>(kind: string, name: string, spec: S): ServiceResource {
  return {
    apiVersion: 'boxyard.io/v1alpha1',
    kind,
    metadata: { name, namespace: 'team', uid: `uid-${name}`, generation: 1 },
    spec: spec as unknown as ServiceResource['spec'],
  };
}

const box = (over: Partial<BoxRepositorySpec> = {}) =>
  resource<BoxRepositorySpec>('BoxRepository', 'boxes', {
    ...common,
    database: { secretRef: { name: 'db', key: 'url' }, schema: 'box_repository', poolSize: 10 },
    storage,
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
  });
const share = (over: Partial<FileShareSpec> = {}) =>
  resource<FileShareSpec>('FileShare', 'files', {
    ...common,
    database: { secretRef: { name: 'db', key: 'url' }, schema: 'file_share', poolSize: 10 },
    storage: { ...storage, bucket: 'files', prefix: 'team-a' },
    uploads: { maxBytes: 5 * 1024 ** 3 },
    events: { heartbeatSeconds: 15, retentionHours: 24 },
    shares: { defaultExpirySeconds: 604800, maxExpirySeconds: 7776000 },
    ...over,
  });
const pool = (over: Partial<TerminalPoolSpec> = {}) =>
  resource<TerminalPoolSpec>('TerminalPool', 'shells', {
    ...common,
    database: { secretRef: { name: 'db', key: 'url' }, schema: 'terminal', poolSize: 10 },
    sessionPod: {
      imagePullPolicy: 'IfNotPresent',
      shell: '/bin/bash',
      resources: { requests: { cpu: '50m' }, limits: { cpu: 1, memory: '512Mi' } },
      readyTimeoutSeconds: 60,
      egress: {} as TerminalPoolSpec['sessionPod']['egress'],
    },
    sessions: { idleTimeoutSeconds: 1800, maxLifetimeSeconds: 28800, reattachGraceSeconds: 300, perUserLimit: 3, globalLimit: 100, scrollbackBytes: 1048576 },
    recording: { mode: 'off', input: false, retentionDays: 30, maxBytes: 268435456 },
    ...over,
  });

const input = (kind: KindInfo, r: ServiceResource, over: Partial<DesiredInput> = {}): DesiredInput => ({
  kind,
  resource: r,
  defaultImage: 'registry.example/boxyard:1.0',
  serviceMonitorAvailable: false,
  secretDigest: 'digest-1',
  ...over,
});

const find = (objects: KubeObject[], kind: string) => objects.find((o) => o.kind === kind) as (KubeObject & Record<string, any>) | undefined;
const kinds = (objects: KubeObject[]) => objects.map((o) => o.kind);

describe('desired Deployment', () => {
  const { objects } = desiredState(input(boxRepository, box()));
  const deployment = find(objects, 'Deployment')!;
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];

  it('runs `boxyard serve <service>` with the config file, the service port and the image', () => {
    expect(deployment.metadata.name).toBe('boxes-box-repository');
    expect(container.args).toEqual(['serve', 'box-repository', '--config', '/etc/boxyard/config.yaml']);
    expect(container.ports).toEqual([
      { name: 'http', containerPort: 3000, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
    ]);
    expect(container.image).toBe('registry.example/boxyard:1.0');
  });

  it('probes /health for liveness and startup, /health/ready for readiness', () => {
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(container.startupProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
  });

  it("stops gracefully: leaves the endpoints in a preStop wait, then has the resource's grace period to finish", () => {
    expect(container.lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    expect(pod.terminationGracePeriodSeconds).toBe(600);
    const short = find(desiredState(input(boxRepository, box({ terminationGracePeriodSeconds: 30 }))).objects, 'Deployment')!;
    expect(short.spec.template.spec.terminationGracePeriodSeconds).toBe(30);
  });

  it('meets the restricted pod security standard', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.automountServiceAccountToken).toBe(false); // no API access for this service
    expect(pod.volumes.find((v: { name: string }) => v.name === 'tmp').emptyDir).toBeDefined(); // writable /tmp on a read-only root
  });

  it('mounts config.yaml from the ConfigMap and every secret as a file', () => {
    expect(container.volumeMounts).toContainEqual({ name: 'config', mountPath: '/etc/boxyard/config.yaml', subPath: 'config.yaml', readOnly: true });
    expect(container.volumeMounts).toContainEqual({ name: 'secrets', mountPath: SECRETS_DIR, readOnly: true });
    const sources = pod.volumes.find((v: { name: string }) => v.name === 'secrets').projected.sources.map((s: { secret: unknown }) => s.secret);
    expect(sources).toEqual([
      { name: 'db', items: [{ key: 'url', path: 'database/url' }] },
      { name: 'boxes-box-repository-session', items: [{ key: 'secret', path: 'session/secret' }] },
      { name: 'boxes-box-repository-admin', items: [{ key: 'password', path: 'admin/password' }] },
      {
        name: 's3',
        items: [
          { key: 'accessKey', path: 'storage/access_key' },
          { key: 'secretKey', path: 'storage/secret_key' },
        ],
      },
    ]);
    expect(container.env).toBeUndefined(); // no secret in the environment
  });

  it('names the Secrets the spec references instead of generating them', () => {
    const r = box({ auth: { ...common.auth, sessionSecretRef: { name: 'keys', key: 'jwt' }, adminPasswordSecretRef: { name: 'admin', key: 'pw' } } });
    const state = desiredState(input(boxRepository, r));
    expect(state.sources.session).toEqual({ name: 'keys', key: 'jwt', generated: false });
    expect(desiredGeneratedSecrets(boxRepository, r, state.sources, generateValues())).toEqual([]);
  });

  it('rolls the pods (new checksum) when the config or a secret changes, and only then', () => {
    const checksum = (r: ServiceResource, digest = 'digest-1') => desiredState(input(boxRepository, r, { secretDigest: digest })).checksum;
    const base = checksum(box());
    expect(checksum(box())).toBe(base);
    expect(find(objects, 'Deployment')!.spec.template.metadata.annotations[CHECKSUM_ANNOTATION]).toBe(base);
    expect(checksum(box({ uploads: { maxBytes: 1024, stallTimeoutSeconds: 60 } }))).not.toBe(base);
    expect(checksum(box(), 'digest-2')).not.toBe(base);
    expect(checksum(box({ replicas: 3 }))).toBe(base); // scaling is not a config change
  });

  it('spreads replicas over nodes and adds a PodDisruptionBudget only with more than one replica', () => {
    expect(pod.topologySpreadConstraints).toBeUndefined();
    expect(kinds(objects)).not.toContain('PodDisruptionBudget');
    const scaled = desiredState(input(boxRepository, box({ replicas: 3 }))).objects;
    expect(find(scaled, 'Deployment')!.spec.template.spec.topologySpreadConstraints[0]).toMatchObject({
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: 'ScheduleAnyway',
    });
    expect(find(scaled, 'PodDisruptionBudget')!.spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'box-repository', 'app.kubernetes.io/instance': 'boxes' } },
    });
  });

  it('owns every child through a controller reference', () => {
    for (const object of objects) {
      expect(object.metadata.ownerReferences).toEqual([
        { apiVersion: 'boxyard.io/v1alpha1', kind: 'BoxRepository', name: 'boxes', uid: 'uid-boxes', controller: true, blockOwnerDeletion: true },
      ]);
      expect(object.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('boxyard-operator');
      expect(object.metadata.namespace).toBe('team');
    }
  });
});

describe('desired exposure', () => {
  it('always has a Service and NetworkPolicy on the service port; an Ingress (with TLS) only when asked', () => {
    const plain = desiredState(input(fileShare, share())).objects;
    expect(kinds(plain)).toEqual(['ConfigMap', 'Service', 'Deployment', 'NetworkPolicy']);
    expect(find(plain, 'Service')!.spec.ports).toEqual([
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
      { name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' },
    ]);
    // /metrics: from inside the cluster only (Prometheus), on its own port, which no Ingress names.
    expect(find(plain, 'NetworkPolicy')!.spec.ingress).toEqual([
      { ports: [{ port: 3001, protocol: 'TCP' }] },
      { ports: [{ port: 9090, protocol: 'TCP' }], from: [{ namespaceSelector: {} }] },
    ]);
    const config = parse(find(plain, 'ConfigMap')!.data['config.yaml']);
    expect(config.metrics).toEqual({ host: '0.0.0.0', port: 9090 });
    const exposed = desiredState(
      input(fileShare, share({ ingress: { host: 'files.example.com', className: 'nginx', path: '/', tls: { secretName: 'files-tls' } } })),
    );
    const ingress = find(exposed.objects, 'Ingress')!;
    expect(ingress.spec).toEqual({
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'files.example.com',
          http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'files-file-share', port: { name: 'http' } } } }] },
        },
      ],
      tls: [{ hosts: ['files.example.com'], secretName: 'files-tls' }],
    });
    expect(exposed.url).toBe('https://files.example.com');
    expect(desiredState(input(fileShare, share())).url).toBe('http://files-file-share.team.svc');
  });

  it('drops the NetworkPolicy when disabled and restricts its peers when given', () => {
    expect(kinds(desiredState(input(fileShare, share({ networkPolicy: { enabled: false } }))).objects)).not.toContain('NetworkPolicy');
    const from = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }];
    expect(find(desiredState(input(fileShare, share({ networkPolicy: { enabled: true, from } }))).objects, 'NetworkPolicy')!.spec.ingress[0].from).toEqual(
      from,
    );
  });

  it("sets OTEL_* from the resource's tracing, else the operator's, and none without an endpoint", () => {
    const otel = (r: ServiceResource, over: Partial<DesiredInput> = {}) => {
      const env: { name: string; value?: string; valueFrom?: unknown }[] =
        find(desiredState(input(fileShare, r, over)).objects, 'Deployment')!.spec.template.spec.containers[0].env ?? [];
      return Object.fromEntries(env.map((e) => [e.name, e.value ?? e.valueFrom]));
    };
    expect(otel(share())).toEqual({});
    const inherited = otel(share(), { tracing: { endpoint: 'http://collector.obs:4318', protocol: 'http/json', sampleRatio: 0.1 } });
    expect(inherited).toEqual({
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.obs:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'boxyard-file-share',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_RESOURCE_ATTRIBUTES: 'k8s.namespace.name=team,k8s.pod.name=$(POD_NAME),k8s.deployment.name=files-file-share,boxyard.resource.kind=FileShare',
    });
    const own = otel(
      share({
        monitoring: {
          serviceMonitor: { enabled: true, interval: '30s' },
          tracing: { enabled: true, endpoint: 'https://tempo.example:4318', sampleRatio: 0.5 },
        },
      }),
      { tracing: { endpoint: 'http://collector.obs:4318', protocol: 'grpc' } },
    );
    expect(own).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://tempo.example:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    });
    const off = otel(share({ monitoring: { serviceMonitor: { enabled: true, interval: '30s' }, tracing: { enabled: false } } }), {
      tracing: { endpoint: 'http://collector.obs:4318' },
    });
    expect(off).toEqual({});
    // The operator reads its own OTEL_* settings as these defaults.
    expect(
      tracingDefaultsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    ).toEqual({ endpoint: 'http://c:4318', sampleRatio: 0.25 });
    expect(tracingDefaultsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toEqual({});
  });

  it('adds a ServiceMonitor only when its CRD exists and the spec allows it', () => {
    expect(kinds(desiredState(input(fileShare, share(), { serviceMonitorAvailable: true })).objects)).toContain('ServiceMonitor');
    expect(find(desiredState(input(fileShare, share(), { serviceMonitorAvailable: true })).objects, 'ServiceMonitor')!.spec.endpoints).toEqual([
      { port: 'metrics', path: '/metrics', interval: '30s' },
    ]);
    expect(kinds(desiredState(input(fileShare, share(), { serviceMonitorAvailable: false })).objects)).not.toContain('ServiceMonitor');
    const off = share({ monitoring: { serviceMonitor: { enabled: false, interval: '30s' } } as CommonSpec['monitoring'] });
    expect(kinds(desiredState(input(fileShare, off, { serviceMonitorAvailable: true })).objects)).not.toContain('ServiceMonitor');
  });
});

describe('terminal gateway identity', () => {
  const { objects } = desiredState(input(terminalPool, pool()));

  it("gets its own ServiceAccount, bound in its namespace only to the chart's gateway ClusterRole (no Role of its own)", () => {
    expect(kinds(objects)).toEqual(['ServiceAccount', 'RoleBinding', 'ConfigMap', 'Service', 'Deployment', 'NetworkPolicy']);
    expect(find(objects, 'RoleBinding')).toMatchObject({
      metadata: { name: 'shells-terminal-gateway', namespace: 'team' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'boxyard-terminal-gateway' },
      subjects: [{ kind: 'ServiceAccount', name: 'shells-terminal', namespace: 'team' }],
    });
    const renamed = desiredState({ ...input(terminalPool, pool()), gatewayClusterRole: 'rel-terminal-gateway' }).objects;
    expect(find(renamed, 'RoleBinding')!.roleRef.name).toBe('rel-terminal-gateway');
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    expect(pod.serviceAccountName).toBe('shells-terminal');
    expect(pod.automountServiceAccountToken).toBe(true);
  });
});

describe('config.yaml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'boxyard-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The shared sections with the kit's own schemas; service sections are the services' business, checked by name.
  const shared = {
    server: serverSchema,
    metrics: metricsSchema,
    logging: loggingSchema,
    database: databaseSchema,
    rate_limiting: rateLimitSchema,
    session: sessionSchema,
    admin: z.strictObject({ username: z.string(), password: z.string().min(8) }),
  };

  /** The box repository's limits: the shared ones and the seed's class ceilings. */
  const ceiling = z.number().int().positive();
  const boxRateLimits = rateLimitSchema.unwrap().extend({
    file_operations_max_requests: ceiling,
    download_max_requests: ceiling,
    download_link_max_requests: ceiling,
    architecture_operations_max_requests: ceiling,
  });

  /** Loads the rendered config like a pod would, with the secret files written where the volume puts them. */
  const load = (yamlText: string, schema: z.ZodType) => loadAsPod(yamlText, schema, dir);

  it("box-repository: loads with the kit, secrets from files, the contract's sections only", () => {
    const { configYaml } = desiredState(input(boxRepository, box({ ingress: { host: 'boxes.example.com', path: '/', tls: { secretName: 't' } } })));
    const config = load(
      configYaml,
      z.strictObject({
        ...shared,
        rate_limiting: boxRateLimits,
        storage: storageSchema,
        uploads: z.strictObject({ max_bytes: z.number(), stall_timeout_seconds: z.number() }),
        download_links: z.strictObject({ ttl_seconds: z.number() }),
        auth: z.strictObject({ sign_up: z.enum(['open', 'invited', 'off']) }),
      }),
    );
    expect(config.database).toEqual({ url: 'postgres://u:p@db:5432/boxyard', schema: 'box_repository', pool_size: 10 });
    expect(config.storage).toMatchObject({
      driver: 's3',
      endpoint: 'http://minio.storage.svc:9000',
      access_key: 'AKIA',
      secret_key: 'secret',
      bucket: 'boxes',
      prefix: '',
    });
    expect(config.server).toMatchObject({ host: '0.0.0.0', port: 3000, public_url: 'https://boxes.example.com', trust_proxy: 1 });
    // The drain ends before the kubelet's SIGKILL: 600 s minus the preStop wait, the drain delay and a margin.
    expect((config.server as { shutdown: unknown }).shutdown).toEqual({ delay_seconds: 1, grace_seconds: 590 });
    expect(config.session).toMatchObject({ secret: 'x'.repeat(64), issuer: 'https://boxes.example.com', audience: 'box-repository' });
    expect(config.admin).toEqual({ username: 'admin', password: 'Str0ngPassw0rd' });
    expect(config.uploads).toEqual({ max_bytes: 10 * 1024 ** 3, stall_timeout_seconds: 60 });
    expect(config.auth).toEqual({ sign_up: 'invited' });
    expect(config.rate_limiting).toMatchObject({ max_requests: 1000, window_seconds: 900, file_operations_max_requests: 100, download_max_requests: 1000 });
    expect(configYaml).not.toMatch(/Str0ng|AKIA/); // values never in the ConfigMap
  });

  it('file-share: uploads, events and shares sections; forwarded headers not trusted without an Ingress', () => {
    const { configYaml } = desiredState(input(fileShare, share()));
    const config = load(
      configYaml,
      z.strictObject({
        ...shared,
        storage: storageSchema,
        uploads: z.strictObject({ max_bytes: z.number() }),
        events: z.strictObject({ heartbeat_seconds: z.number(), retention_hours: z.number() }),
        shares: z.strictObject({ default_expiry_seconds: z.number(), max_expiry_seconds: z.number() }),
      }),
    );
    expect(config.events).toEqual({ heartbeat_seconds: 15, retention_hours: 24 });
    expect(config.shares).toEqual({ default_expiry_seconds: 604800, max_expiry_seconds: 7776000 });
    expect(config.server).toMatchObject({ port: 3001, trust_proxy: false });
    expect(config.storage).toMatchObject({ prefix: 'team-a', bucket: 'files' });
  });

  it("terminal: sessions and a kubernetes backend in the pool's namespace, no storage", () => {
    const { configYaml } = desiredState(input(terminalPool, pool({ allowedOrigins: ['https://portal.example.com'] })));
    const config = load(
      configYaml,
      z.strictObject({
        ...shared,
        sessions: z.record(z.string(), z.number()),
        recording: z.strictObject({ mode: z.enum(['off', 'on', 'required']), input: z.boolean(), retention_days: z.number(), max_bytes: z.number() }),
        allowed_origins: z.array(z.string()),
        backend: z.unknown(),
      }),
    );
    expect(config.sessions).toEqual({
      idle_timeout_seconds: 1800,
      max_lifetime_seconds: 28800,
      reattach_grace_seconds: 300,
      per_user_limit: 3,
      global_limit: 100,
      scrollback_bytes: 1048576,
    });
    expect(config.backend).toEqual({
      kind: 'kubernetes',
      kubernetes: {
        namespace: 'team',
        image: 'registry.example/boxyard:1.0',
        image_pull_policy: 'IfNotPresent',
        shell: '/bin/bash',
        resources: { requests: { cpu: '50m' }, limits: { cpu: '1', memory: '512Mi' } },
        pod_ready_timeout_seconds: 60,
        gateway_pod_labels: { 'app.kubernetes.io/name': 'terminal', 'app.kubernetes.io/instance': 'shells' },
        pool: 'shells',
        egress: {},
      },
    });
    // The session NetworkPolicy admits pods with gateway_pod_labels: they must be the gateway pods' own labels.
    const podLabels = find(desiredState(input(terminalPool, pool())).objects, 'Deployment')!.spec.template.metadata.labels;
    expect(podLabels).toMatchObject((config.backend as { kubernetes: { gateway_pod_labels: object } }).kubernetes.gateway_pod_labels);
    expect(config.allowed_origins).toEqual(['https://portal.example.com']);
    expect(config).not.toHaveProperty('storage');
  });
});

describe('generated Secrets', () => {
  it('hold a 384-bit session key and an admin password that meets the password policy', () => {
    const r = box();
    const values = generateValues();
    const secrets = desiredGeneratedSecrets(boxRepository, r, desiredState(input(boxRepository, r)).sources, values);
    expect(secrets.map((s) => s.metadata.name)).toEqual(['boxes-box-repository-session', 'boxes-box-repository-admin']);
    const decode = (s: KubeObject, key: string) => Buffer.from((s.data as Record<string, string>)[key]!, 'base64').toString();
    expect(decode(secrets[0]!, 'secret')).toBe(values.sessionSecret);
    expect(Buffer.from(values.sessionSecret, 'base64url')).toHaveLength(48);
    expect(decode(secrets[1]!, 'password')).toMatch(/^(?=.*[A-Z])(?=.*[a-z])(?=.*\d).{24,}$/);
    expect(generateValues().sessionSecret).not.toBe(values.sessionSecret);
  });
});
