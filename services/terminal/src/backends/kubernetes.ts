// Kubernetes backend: one pod per session running the agent, never reused (the pod is named after the session
// and deleted when it ends). The pod's shell runs non-root (the agent starts as root with CAP_SETUID and CAP_SETGID
// only and drops to run_as_user before the shell exists), with no privilege escalation, no capabilities, the default
// seccomp profile, no service-account token and resource limits; a NetworkPolicy admits only the gateway, and lets
// the shell reach only what `egress` allows (by default DNS and public addresses, never the cluster's own ranges
// nor the cloud metadata address).
// The gateway reaches the agent at <pod IP>:<port from the pod's `boxyard.io/agent-port` annotation>, and before it
// attaches checks that the pod it started (by UID) still holds that IP: a dead session pod's IP may go to another
// pod. The agent proves itself on every call besides (agent/handshake.ts).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  ApiException, CoreV1Api, KubeConfig, NetworkingV1Api, PatchStrategy, setHeaderOptions,
  type V1NetworkPolicy, type V1NetworkPolicyEgressRule, type V1Pod,
} from '@kubernetes/client-node';
import type { SessionsConfig, KubernetesBackendConfig } from '../config.ts';
import type { AgentEnvironment } from '../agent/settings.ts';
import { inClientSpan } from '@boxyard/kit';
import { telemetryEnvironment } from '../agent/tracing.ts';
import { NotTheAgentError } from '../agent/client.ts';
import type { AgentSpec, BackendProbe, SessionBackend, StartedAgent } from './types.ts';

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'boxyard' } as const;
export const SESSION_POD_LABELS = { ...MANAGED_BY, 'app.kubernetes.io/name': 'boxyard-terminal-session', 'app.kubernetes.io/component': 'terminal-session' } as const;
export const AGENT_PORT_ANNOTATION = 'boxyard.io/agent-port';
export const NETWORK_POLICY_NAME = 'boxyard-terminal-sessions';
export const POOL_LABEL = 'boxyard.io/pool';

/** The policy of a pool's sessions: its own name when the pool is named (several pools may share a namespace). */
export const networkPolicyName = (config: Pick<KubernetesBackendConfig, 'pool'>) => (config.pool ? `${NETWORK_POLICY_NAME}-${config.pool}` : NETWORK_POLICY_NAME);
const sessionSelector = (config: Pick<KubernetesBackendConfig, 'pool'>) => ({ ...SESSION_POD_LABELS, ...(config.pool ? { [POOL_LABEL]: config.pool } : {}) });

/**
 * Not "the internet": private (RFC 1918, IPv6 ULA), shared (RFC 6598), link-local (169.254.0.0/16 holds the cloud
 * metadata address 169.254.169.254; fe80::/10) and NAT64 ranges. Cluster pod and service ranges are private in
 * practice; `excluded_cidrs` adds any that are not.
 */
export const NON_INTERNET_V4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'];
export const NON_INTERNET_V6 = ['fc00::/7', 'fe80::/10', '64:ff9b::/96'];

export function sessionEgressRules(egress: KubernetesBackendConfig['egress']): V1NetworkPolicyEgressRule[] {
  const rules: V1NetworkPolicyEgressRule[] = [];
  if (egress.cluster_dns) {
    rules.push({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
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
  rules.push(...(egress.allow as V1NetworkPolicyEgressRule[]));
  return rules;
}
const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export const podName = (sessionId: string) => `boxyard-term-${sessionId}`;

/** A session's resource: `pod/<name> uid:<uid>` (the UID tells this pod from a later one of the same name). */
const podResource = (name: string, uid: string | undefined) => `pod/${name}${uid ? ` uid:${uid}` : ''}`;
export function parsePodResource(resource: string | null): { name: string; uid: string | undefined } | undefined {
  const match = /^pod\/([a-z0-9.-]{1,253})(?: uid:([0-9a-f-]{36}))?$/.exec(resource ?? '');
  return match ? { name: match[1]!, uid: match[2] } : undefined;
}
/** The host part of `host:port` or `[v6]:port`. */
const hostOf = (address: string) => address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '');

/** A label-safe owner value: the user id is a UUID (label-safe already); anything else is hashed. */
export const ownerLabel = (ownerId: string) =>
  /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/i.test(ownerId) ? ownerId : createHash('sha256').update(ownerId).digest('hex').slice(0, 40);

const isStatus = (error: unknown, code: number) => error instanceof ApiException && error.code === code;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function sessionPod(input: { spec: AgentSpec; config: KubernetesBackendConfig; namespace: string; sessions: Pick<SessionsConfig, 'max_lifetime_seconds'> }): V1Pod {
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
  };
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
      },
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

export function sessionNetworkPolicy(config: KubernetesBackendConfig, namespace: string): V1NetworkPolicy {
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
          _from: [
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

function defaultNamespace(): string {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && Boolean(pod.status.podIP) && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function terminatedExitCode(pod: V1Pod): number | null {
  return pod.status?.containerStatuses?.find((c) => c.name === 'agent')?.state?.terminated?.exitCode ?? null;
}

export interface KubernetesBackendOptions {
  config: KubernetesBackendConfig;
  sessions: SessionsConfig;
  log: { info(message: string): void; warn(message: string): void };
}

export function createKubernetesBackend(options: KubernetesBackendOptions): SessionBackend & { namespace: string } {
  const { config } = options;
  const kc = new KubeConfig();
  if (config.kubeconfig) kc.loadFromFile(config.kubeconfig);
  else kc.loadFromDefault();
  const core = kc.makeApiClient(CoreV1Api);
  const networking = kc.makeApiClient(NetworkingV1Api);
  const namespace = config.namespace ?? defaultNamespace();
  const server = kc.getCurrentCluster()?.server;
  // Inside a start request's trace, each Kubernetes API call is a CLIENT span (`create pods`), as the operator's are.
  const api = <T>(verb: string, resource: string, run: () => Promise<T>) =>
    inClientSpan('@boxyard/terminal/kubernetes', `${verb} ${resource}`, { 'k8s.namespace.name': namespace, ...(server ? { 'server.address': new URL(server).hostname } : {}) }, run);
  let policyReady: Promise<void> | undefined;

  const ensureNetworkPolicy = async () => {
    const body = sessionNetworkPolicy(config, namespace);
    try {
      await api('create', 'networkpolicies', () => networking.createNamespacedNetworkPolicy({ namespace, body }));
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      // Already there (another replica, an earlier start): keep it in line with the current config. A JSON patch
      // (the Role grants patch, not update) that replaces the whole spec, so no stale selector key survives; the
      // body goes out as is, so it carries the wire name `from` where client-node's model says `_from`.
      const spec = body.spec!;
      const wireSpec = { ...spec, ingress: spec.ingress?.map(({ _from, ...rule }) => ({ ...rule, from: _from })) };
      await api('patch', 'networkpolicies', () =>
        networking.patchNamespacedNetworkPolicy(
          { name: networkPolicyName(config), namespace, body: [{ op: 'replace', path: '/spec', value: wireSpec }] },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        ),
      );
    }
  };

  const deletePod = async (name: string) => {
    try {
      await api('delete', 'pods', () => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 5 }));
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
    }
  };

  return {
    kind: 'kubernetes',
    namespace,

    async start(spec: AgentSpec, onResource?: (resource: string) => void): Promise<StartedAgent> {
      if (config.network_policy) {
        // Fail closed: no session pod without the policy that keeps everyone but the gateway out.
        policyReady ??= ensureNetworkPolicy().catch((error: unknown) => {
          policyReady = undefined;
          throw new Error(`cannot create NetworkPolicy ${networkPolicyName(config)} in ${namespace}: ${(error as Error).message}`, { cause: error });
        });
        await policyReady;
      }
      const name = podName(spec.sessionId);
      const created = await api('create', 'pods', () => core.createNamespacedPod({ namespace, body: sessionPod({ spec, config, namespace, sessions: options.sessions }) }));
      const resource = podResource(name, created.metadata?.uid);
      onResource?.(resource);
      const deadline = Date.now() + config.pod_ready_timeout_seconds * 1000;
      let delay = 250;
      for (;;) {
        const pod = await api('get', 'pods', () => core.readNamespacedPod({ name, namespace }));
        if (isReady(pod)) {
          const port = Number(pod.metadata?.annotations?.[AGENT_PORT_ANNOTATION] ?? config.agent_port);
          const ip = pod.status!.podIP!;
          return { address: `${ip.includes(':') ? `[${ip}]` : ip}:${port}`, resource };
        }
        const phase = pod.status?.phase;
        if (phase === 'Failed' || phase === 'Succeeded') {
          await deletePod(name);
          throw new Error(`session pod ${name} ended before it was ready (${phase}${pod.status?.reason ? `: ${pod.status.reason}` : ''})`);
        }
        if (Date.now() > deadline) {
          await deletePod(name);
          throw new Error(`session pod ${name} not ready within ${config.pod_ready_timeout_seconds} s (phase ${phase ?? 'unknown'})`);
        }
        await sleep(delay);
        delay = Math.min(1000, delay * 2);
      }
    },

    async release(session) {
      await deletePod(parsePodResource(session.resource)?.name ?? podName(session.id));
    },

    async verifyAddress(session) {
      const started = parsePodResource(session.resource);
      const name = started?.name ?? podName(session.id);
      let pod: V1Pod | undefined;
      try {
        pod = await api('get', 'pods', () => core.readNamespacedPod({ name, namespace }));
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
      }
      const problem = !pod
        ? 'is gone'
        : started?.uid && pod.metadata?.uid !== started.uid
          ? 'was replaced by another pod of that name'
          : pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running'
            ? 'is not running'
            : !(pod.status?.podIPs ?? [{ ip: pod.status?.podIP }]).some((entry) => entry.ip === hostOf(session.address))
              ? `no longer has the address ${session.address}`
              : undefined;
      if (problem) throw new NotTheAgentError(`session pod ${name} ${problem}`);
    },

    async probe(session): Promise<BackendProbe> {
      try {
        const pod = await core.readNamespacedPod({ name: podName(session.id), namespace });
        if (pod.metadata?.deletionTimestamp || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return { state: 'gone', exitCode: terminatedExitCode(pod) };
        return { state: 'present' };
      } catch (error) {
        if (isStatus(error, 404)) return { state: 'gone', exitCode: null };
        throw error;
      }
    },

    async close() {},
  };
}
