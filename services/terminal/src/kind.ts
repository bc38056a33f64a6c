// TerminalPool: cloud terminals in a cluster, a gateway Deployment that starts one pod per session. `sessions` are
// keys of config.ts (their CRD schema comes from it); the session pod and the allowed origins exist only in the
// cluster and become the `backend.kubernetes` and `allowed_origins` keys here.
import type { ClusterContext, ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { anyObject, boolean, integer, object, PULL_POLICY, QUANTITY, resources, string, type JsonSchema } from '@boxyard/kit/service/cluster-schema.ts';
import { DEFAULT_PORT, terminalConfigSchema } from './config.ts';

const SESSION_POD: JsonSchema = object(
  'The pod each session runs in: a non-root shell (the agent starts as root with only CAP_SETUID and CAP_SETGID and drops to its user before the shell starts, which keeps its environment from the shell), no privilege escalation, default seccomp, no service-account token.',
  {
    image: string("Image of the session pods (default: the gateway's image).", { maxLength: 512 }),
    imagePullPolicy: PULL_POLICY,
    shell: string('Shell started in the session pod.', { default: '/bin/bash', minLength: 1, maxLength: 256 }),
    resources: resources('CPU and memory of each session pod.', { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '1', memory: '512Mi' } }),
    readyTimeoutSeconds: integer('How long the gateway waits for a session pod to become ready.', { default: 60, minimum: 5, maximum: 600 }),
    home: object(
      "A persistent home per user: a PersistentVolumeClaim boxyard-home-<pool>-<user id>, created at the user's first session and mounted as the home of each of their session pods, so files survive sessions. Labelled boxyard.io/pool and boxyard.io/owner=<user id>; owned by nothing, it stays when the user or the pool is deleted (delete it with kubectl delete pvc -l boxyard.io/owner=<user id>). Unset: a home lives and dies with its pod.",
      {
        size: { ...QUANTITY, description: "Requested size of each user's volume, e.g. 1Gi (an existing claim keeps its size)." },
        storageClassName: string("StorageClass of the claims (default: the cluster's default class).", {
          pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$',
          maxLength: 253,
        }),
        accessMode: string("ReadWriteOnce keeps a user's concurrent session pods on one node; ReadWriteMany (where the storage offers it) lets them spread.", {
          enum: ['ReadWriteOnce', 'ReadWriteMany'],
          default: 'ReadWriteOnce',
        }),
        mountPath: string("Where the volume is mounted: the shell's HOME.", {
          pattern: '^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$',
          maxLength: 256,
          default: '/home/user',
        }),
      },
      { required: ['size'] },
    ),
    egress: object(
      'Where shells may connect to: the Egress part of the NetworkPolicy the gateway keeps on its session pods. Anything not allowed here is dropped (needs a network plugin that enforces NetworkPolicy).',
      {
        clusterDNS: boolean('DNS (UDP and TCP 53) to the cluster DNS pods (namespace kube-system, label k8s-app=kube-dns).', true),
        internet: boolean(
          "Public addresses: 0.0.0.0/0 and ::/0 except the private (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10), link-local (169.254/16 with the cloud metadata address 169.254.169.254, fe80::/10) and NAT64 ranges, so neither the cluster's pods and Services nor the metadata service.",
          true,
        ),
        excludedCIDRs: {
          type: 'array',
          description: "More ranges kept out of `internet`, e.g. the cluster's pod and service ranges when they are not private.",
          maxItems: 64,
          items: string('A CIDR range.', { pattern: '^(\\d{1,3}(\\.\\d{1,3}){3}/\\d{1,2}|[0-9a-fA-F:]+:[0-9a-fA-F:]*/\\d{1,3})$', maxLength: 64 }),
        },
        allow: {
          type: 'array',
          description: 'More destinations (networking.k8s.io/v1 NetworkPolicyEgressRule: to, ports), e.g. a package mirror inside the cluster.',
          maxItems: 64,
          items: anyObject,
        },
      },
      { default: {} },
    ),
  },
  { default: {} },
);

const ALLOWED_ORIGINS: JsonSchema = {
  type: 'array',
  description: "Origins allowed to open terminal WebSockets (default: the service's own public origin).",
  maxItems: 32,
  items: string('An origin, scheme://host[:port].', { pattern: '^https?://[^/\\s]+$', maxLength: 2048 }),
};

type Quantities = Record<string, string | number>;
/** The cluster-only fields as the apiserver hands them over (SESSION_POD's defaults filled in). */
interface ClusterOnlySpec {
  sessionPod: {
    image?: string;
    imagePullPolicy: string;
    shell: string;
    resources: { requests?: Quantities; limits?: Quantities };
    readyTimeoutSeconds: number;
    home?: { size: string | number; storageClassName?: string; accessMode: string; mountPath: string };
    egress?: { clusterDNS?: boolean; internet?: boolean; excludedCIDRs?: string[]; allow?: Record<string, unknown>[] };
  };
  allowedOrigins?: string[];
}

/** Drops undefined members, so the rendered config holds only what was set. */
function prune<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => prune(v)) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, prune(v)]),
    ) as T;
  return value;
}

const quantities = (map?: Quantities) => (map ? Object.fromEntries(Object.entries(map).map(([k, v]) => [k, String(v)])) : undefined);

function clusterConfig(spec: ClusterOnlySpec, context: ClusterContext): Record<string, unknown> {
  const pod = spec.sessionPod;
  return {
    ...(spec.allowedOrigins?.length ? { allowed_origins: spec.allowedOrigins } : {}),
    backend: {
      kind: 'kubernetes',
      kubernetes: {
        namespace: context.namespace,
        image: pod.image ?? context.image,
        image_pull_policy: pod.imagePullPolicy,
        shell: pod.shell,
        resources: prune({ requests: quantities(pod.resources.requests), limits: quantities(pod.resources.limits) }),
        pod_ready_timeout_seconds: pod.readyTimeoutSeconds,
        ...(pod.home
          ? {
              home: prune({
                size: String(pod.home.size),
                storage_class: pod.home.storageClassName,
                access_mode: pod.home.accessMode,
                mount_path: pod.home.mountPath,
              }),
            }
          : {}),
        // Session pods admit only these: the labels the operator gives the gateway pods.
        gateway_pod_labels: context.podLabels,
        // The pool's own session NetworkPolicy, so pools sharing a namespace keep their own egress.
        pool: context.podLabels['app.kubernetes.io/instance'],
        egress: prune({
          cluster_dns: pod.egress?.clusterDNS,
          internet: pod.egress?.internet,
          excluded_cidrs: pod.egress?.excludedCIDRs,
          allow: pod.egress?.allow,
        }),
      },
    },
  };
}

export const clusterKind: ClusterKind = {
  kind: 'TerminalPool',
  plural: 'terminalpools',
  singular: 'terminalpool',
  shortNames: ['tpool', 'tpools'],
  description: 'Cloud terminals: a gateway Deployment that starts one pod per shell session in this namespace.',
  service: 'terminal',
  port: DEFAULT_PORT,
  databaseSchema: 'terminal',
  // Optional: where a pool's session recordings go (without it, in the gateway pod's /tmp, gone with the pod).
  storage: 'optional',
  managesPods: true,
  configSchema: terminalConfigSchema,
  configFields: [
    'sessions.idle_timeout_seconds',
    'sessions.max_lifetime_seconds',
    'sessions.reattach_grace_seconds',
    'sessions.per_user_limit',
    'sessions.global_limit',
    'sessions.scrollback_bytes',
    'recording.mode',
    'recording.input',
    'recording.retention_days',
    'recording.max_bytes',
  ],
  clusterOnly: {
    schema: { sessionPod: SESSION_POD, allowedOrigins: ALLOWED_ORIGINS },
    toConfig: (spec, context) => clusterConfig(spec as unknown as ClusterOnlySpec, context),
  },
  validations: {
    sessions: [
      // has(): the rules also run against the bare `{}` default, before its members are defaulted.
      {
        rule: '!has(self.maxLifetimeSeconds) || !has(self.idleTimeoutSeconds) || self.maxLifetimeSeconds >= self.idleTimeoutSeconds',
        message: 'sessions.maxLifetimeSeconds must not be shorter than sessions.idleTimeoutSeconds',
      },
      {
        rule: '!has(self.perUserLimit) || !has(self.globalLimit) || self.perUserLimit <= self.globalLimit',
        message: 'sessions.perUserLimit must not exceed sessions.globalLimit',
      },
    ],
  },
};
