// The Kubernetes objects of a pool's sessions: one pod per session running the agent, and the NetworkPolicy that
// fences them. The pod's shell runs non-root (the agent starts as root with CAP_SETUID and CAP_SETGID only and drops
// to run_as_user before the shell exists), with no privilege escalation, no capabilities, the default seccomp
// profile, no service-account token and resource limits; the NetworkPolicy admits only the gateway, and lets the
// shell reach only what `egress` allows (by default DNS and public addresses, never the cluster's own ranges nor the
// cloud metadata address).
import { createHash } from 'node:crypto';
import type { PersistentVolumeClaim, Pod, PodSpec } from 'kubernetes-types/core/v1.d.ts';
import type { NetworkPolicy, NetworkPolicyEgressRule } from 'kubernetes-types/networking/v1.d.ts';
import type { SessionsConfig, KubernetesBackendConfig } from '../config.ts';
import type { AgentEnvironment } from '../agent/settings.ts';
import { telemetryEnvironment } from '../agent/tracing.ts';
import type { AgentSpec } from './types.ts';

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'boxyard' } as const;
export const SESSION_POD_LABELS = {
  ...MANAGED_BY,
  'app.kubernetes.io/name': 'boxyard-terminal-session',
  'app.kubernetes.io/component': 'terminal-session',
} as const;
export const AGENT_PORT_ANNOTATION = 'boxyard.io/agent-port';
export const NETWORK_POLICY_NAME = 'boxyard-terminal-sessions';
export const POOL_LABEL = 'boxyard.io/pool';

/** The policy of a pool's sessions: its own name when the pool is named (several pools may share a namespace). */
export const networkPolicyName = (config: Pick<KubernetesBackendConfig, 'pool'>) =>
  config.pool ? `${NETWORK_POLICY_NAME}-${config.pool}` : NETWORK_POLICY_NAME;
export const sessionSelector = (config: Pick<KubernetesBackendConfig, 'pool'>) => ({
  ...SESSION_POD_LABELS,
  ...(config.pool ? { [POOL_LABEL]: config.pool } : {}),
});

/**
 * Not "the internet": private (RFC 1918, IPv6 ULA), shared (RFC 6598), link-local (169.254.0.0/16 holds the cloud
 * metadata address 169.254.169.254; fe80::/10) and NAT64 ranges. Cluster pod and service ranges are private in
 * practice; `excluded_cidrs` adds any that are not.
 */
export const NON_INTERNET_V4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'];
export const NON_INTERNET_V6 = ['fc00::/7', 'fe80::/10', '64:ff9b::/96'];

export function sessionEgressRules(egress: KubernetesBackendConfig['egress']): NetworkPolicyEgressRule[] {
  const rules: NetworkPolicyEgressRule[] = [];
  if (egress.cluster_dns) {
    rules.push({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    });
  }
  if (egress.internet) {
    const extra = egress.excluded_cidrs;
    rules.push({
      to: [
        { ipBlock: { cidr: '0.0.0.0/0', except: [...NON_INTERNET_V4, ...extra.filter((c) => !c.includes(':'))] } },
        { ipBlock: { cidr: '::/0', except: [...NON_INTERNET_V6, ...extra.filter((c) => c.includes(':'))] } },
      ],
    });
  }
  // Written by the platform team in the TerminalPool, in the API's own shape.
  rules.push(...(egress.allow as NetworkPolicyEgressRule[]));
  return rules;
}

export const podName = (sessionId: string) => `boxyard-term-${sessionId}`;

/** A label-safe owner value: the user id is a UUID (label-safe already); anything else is hashed. */
export const ownerLabel = (ownerId: string) =>
  /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/i.test(ownerId) ? ownerId : createHash('sha256').update(ownerId).digest('hex').slice(0, 40);

/** A user's home volume: one claim per pool and user, never per session. */
export const homeClaimName = (config: Pick<KubernetesBackendConfig, 'pool'>, ownerId: string) =>
  `boxyard-home-${config.pool ? `${config.pool}-` : ''}${ownerLabel(ownerId)}`;

/**
 * The claim of a user's persistent home (`home` set). Labelled with its pool and user (`kubectl get pvc -l
 * boxyard.io/owner=<user id>`), and owned by nothing: neither the session pods nor the TerminalPool take it along.
 */
export function homeClaim(input: {
  spec: Pick<AgentSpec, 'ownerId' | 'ownerName'>;
  config: KubernetesBackendConfig;
  namespace: string;
}): PersistentVolumeClaim {
  const { config, spec } = input;
  const home = config.home!;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: homeClaimName(config, spec.ownerId),
      namespace: input.namespace,
      labels: {
        ...MANAGED_BY,
        'app.kubernetes.io/component': 'terminal-home',
        ...(config.pool ? { [POOL_LABEL]: config.pool } : {}),
        'boxyard.io/owner': ownerLabel(spec.ownerId),
      },
      // Who it was made for, for people reading `kubectl describe` (the label holds the id only).
      annotations: { 'boxyard.io/owner-username': spec.ownerName.slice(0, 256) },
    },
    spec: {
      accessModes: [home.access_mode],
      volumeMode: 'Filesystem',
      resources: { requests: { storage: home.size } },
      ...(home.storage_class ? { storageClassName: home.storage_class } : {}),
    },
  };
}

/**
 * What a persistent home adds to the session pod: the claim as a volume at `mount_path`, group-owned by the shell's
 * group (fsGroup, where the volume type supports it), and with ReadWriteOnce, the user's other session pods' node
 * (a pod that matches its own affinity term may go anywhere when no other does: the first session picks the node).
 */
function homeParts(
  config: KubernetesBackendConfig,
  spec: AgentSpec,
): Pick<PodSpec, 'volumes' | 'affinity'> & { mount: { name: string; mountPath: string }[]; fsGroup?: number } {
  const home = config.home;
  if (!home) return { mount: [] };
  return {
    volumes: [{ name: 'home', persistentVolumeClaim: { claimName: homeClaimName(config, spec.ownerId) } }],
    mount: [{ name: 'home', mountPath: home.mount_path }],
    fsGroup: config.run_as_group,
    ...(home.access_mode === 'ReadWriteOnce'
      ? {
          affinity: {
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: { matchLabels: { ...sessionSelector(config), 'boxyard.io/owner': ownerLabel(spec.ownerId) } },
                  topologyKey: 'kubernetes.io/hostname',
                },
              ],
            },
          },
        }
      : {}),
  };
}

export function sessionPod(input: {
  spec: AgentSpec;
  config: KubernetesBackendConfig;
  namespace: string;
  sessions: Pick<SessionsConfig, 'max_lifetime_seconds'>;
}): Pod {
  const { spec, config } = input;
  const env: AgentEnvironment = {
    BOXYARD_AGENT_SESSION_ID: spec.sessionId,
    BOXYARD_AGENT_LISTEN: `0.0.0.0:${config.agent_port}`,
    BOXYARD_AGENT_KEY: spec.agentKey,
    BOXYARD_AGENT_GATEWAY_KEY: spec.gatewayPublicKey,
    // The container starts as root with CAP_SETUID/CAP_SETGID only; the agent drops to this uid before its shell
    // exists, which leaves the agent not dumpable: the shell (same uid) cannot read its environment or memory. It
    // refuses to start where the shell could.
    BOXYARD_AGENT_DROP_TO: `${config.run_as_user}:${config.run_as_group}`,
    BOXYARD_AGENT_PRIVATE_ENVIRONMENT: 'true',
    BOXYARD_AGENT_SHELL: config.shell,
    BOXYARD_AGENT_SCROLLBACK_BYTES: String(spec.scrollbackBytes),
    BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: String(spec.idleTimeoutSeconds),
    BOXYARD_AGENT_REATTACH_GRACE_SECONDS: String(spec.reattachGraceSeconds),
    BOXYARD_AGENT_EXPIRES_AT: String(spec.expiresAt),
    ...(config.home ? { BOXYARD_AGENT_HOME: config.home.mount_path } : {}),
  };
  const home = homeParts(config, spec);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(spec.sessionId),
      namespace: input.namespace,
      labels: { ...sessionSelector(config), 'boxyard.io/session': spec.sessionId, 'boxyard.io/owner': ownerLabel(spec.ownerId) },
      annotations: { [AGENT_PORT_ANNOTATION]: String(config.agent_port) },
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      // No service environment variables of the namespace leak into the shell's pod.
      enableServiceLinks: false,
      // Kubernetes itself ends the pod at the session's lifetime, even if no gateway is left to do it.
      activeDeadlineSeconds: input.sessions.max_lifetime_seconds + 60,
      terminationGracePeriodSeconds: 5,
      // Root only until the agent drops to run_as_user (BOXYARD_AGENT_DROP_TO), with no capability but the two that
      // takes; no shell ever runs as root (the agent refuses uid 0).
      securityContext: {
        runAsNonRoot: false,
        runAsUser: 0,
        runAsGroup: 0,
        seccompProfile: { type: 'RuntimeDefault' },
        ...(home.fsGroup !== undefined ? { fsGroup: home.fsGroup, fsGroupChangePolicy: 'OnRootMismatch' } : {}),
      },
      ...(home.volumes ? { volumes: home.volumes } : {}),
      ...(home.affinity ? { affinity: home.affinity } : {}),
      containers: [
        {
          name: 'agent',
          image: config.image,
          imagePullPolicy: config.image_pull_policy,
          command: config.agent_command,
          // The agent's settings, and the gateway's tracing settings with the start request's trace (TRACEPARENT).
          env: Object.entries({ ...env, ...telemetryEnvironment(process.env) }).map(([name, value]) => ({ name, value: value ?? '' })),
          ports: [{ name: 'agent', containerPort: config.agent_port, protocol: 'TCP' }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'agent' }, periodSeconds: 2, failureThreshold: 3 },
          resources: { requests: config.resources.requests, limits: config.resources.limits },
          ...(home.mount.length ? { volumeMounts: home.mount } : {}),
          securityContext: {
            allowPrivilegeEscalation: false,
            privileged: false,
            capabilities: { drop: ['ALL'], add: ['SETUID', 'SETGID'] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ],
    },
  };
}

export function sessionNetworkPolicy(config: KubernetesBackendConfig, namespace: string): NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: networkPolicyName(config), namespace, labels: { ...MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: sessionSelector(config) },
      // Egress too: with no egress rule at all, a shell reaches nothing (not even DNS).
      policyTypes: ['Ingress', 'Egress'],
      egress: sessionEgressRules(config.egress),
      ingress: [
        {
          from: [
            {
              podSelector: { matchLabels: config.gateway_pod_labels },
              ...(config.gateway_namespace && config.gateway_namespace !== namespace
                ? { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': config.gateway_namespace } } }
                : {}),
            },
          ],
          ports: [{ protocol: 'TCP', port: config.agent_port }],
        },
      ],
    },
  };
}
