// What differs between the three kinds: the service the pods run, its port, whether it uses object storage,
// whether it needs API access (the terminal gateway starts session pods), and its own config sections.
import type { BoxRepositorySpec, FileShareSpec, ServiceSpec, TerminalPoolSpec } from '../crds/types.ts';
import { resources, type ResourceType } from '../kube/resources.ts';

export interface ConfigContext {
  namespace: string;
  /** Image of the gateway pods (the session pods default to it). */
  image: string;
  /** The selector labels of the service's own pods (the gateway's, for the session NetworkPolicy). */
  podLabels: Record<string, string>;
}

export interface KindInfo {
  kind: 'BoxRepository' | 'FileShare' | 'TerminalPool';
  resource: ResourceType;
  /** The service name of `boxyard serve <service>`; also the suffix of every child's name. */
  service: 'box-repository' | 'file-share' | 'terminal';
  port: number;
  storage: boolean;
  /** Needs a ServiceAccount with a Role to manage pods in its namespace. */
  managesPods: boolean;
  /** The service-specific sections of config.yaml (contract key names). */
  serviceConfig(spec: ServiceSpec, context: ConfigContext): Record<string, unknown>;
}

export const boxRepository: KindInfo = {
  kind: 'BoxRepository',
  resource: resources.boxRepository,
  service: 'box-repository',
  port: 3000,
  storage: true,
  managesPods: false,
  serviceConfig(spec) {
    const s = spec as BoxRepositorySpec;
    return {
      uploads: { max_bytes: s.uploads.maxBytes, stall_timeout_seconds: s.uploads.stallTimeoutSeconds },
      download_links: { ttl_seconds: s.downloadLinks.ttlSeconds },
      auth: { sign_up: s.signUp },
    };
  },
};

export const fileShare: KindInfo = {
  kind: 'FileShare',
  resource: resources.fileShare,
  service: 'file-share',
  port: 3001,
  storage: true,
  managesPods: false,
  serviceConfig(spec) {
    const s = spec as FileShareSpec;
    return {
      uploads: { max_bytes: s.uploads.maxBytes },
      events: { heartbeat_seconds: s.events.heartbeatSeconds, retention_hours: s.events.retentionHours },
    };
  },
};

export const terminalPool: KindInfo = {
  kind: 'TerminalPool',
  resource: resources.terminalPool,
  service: 'terminal',
  port: 3002,
  storage: false,
  managesPods: true,
  serviceConfig(spec, context) {
    const s = spec as TerminalPoolSpec;
    const quantities = (map?: Record<string, string | number>) => (map ? Object.fromEntries(Object.entries(map).map(([k, v]) => [k, String(v)])) : undefined);
    return {
      sessions: {
        idle_timeout_seconds: s.sessions.idleTimeoutSeconds,
        max_lifetime_seconds: s.sessions.maxLifetimeSeconds,
        reattach_grace_seconds: s.sessions.reattachGraceSeconds,
        per_user_limit: s.sessions.perUserLimit,
        global_limit: s.sessions.globalLimit,
        scrollback_bytes: s.sessions.scrollbackBytes,
      },
      ...(s.allowedOrigins?.length ? { allowed_origins: s.allowedOrigins } : {}),
      backend: {
        kind: 'kubernetes',
        kubernetes: {
          namespace: context.namespace,
          image: s.sessionPod.image ?? context.image,
          image_pull_policy: s.sessionPod.imagePullPolicy,
          shell: s.sessionPod.shell,
          resources: prune({ requests: quantities(s.sessionPod.resources.requests), limits: quantities(s.sessionPod.resources.limits) }),
          pod_ready_timeout_seconds: s.sessionPod.readyTimeoutSeconds,
          // Session pods admit only these: the labels this operator gives the gateway pods.
          gateway_pod_labels: context.podLabels,
          // The pool's own session NetworkPolicy, so pools sharing a namespace keep their own egress.
          pool: context.podLabels['app.kubernetes.io/instance'],
          egress: prune({
            cluster_dns: s.sessionPod.egress?.clusterDNS,
            internet: s.sessionPod.egress?.internet,
            excluded_cidrs: s.sessionPod.egress?.excludedCIDRs,
            allow: s.sessionPod.egress?.allow,
          }),
        },
      },
    };
  },
};

export const allKinds: KindInfo[] = [boxRepository, fileShare, terminalPool];

/** Drops undefined members, so rendered objects hold only what was set (SSA would read `null` as "remove"). */
export function prune<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => prune(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (v === undefined) continue;
      out[key] = prune(v);
    }
    return out as T;
  }
  return value;
}
