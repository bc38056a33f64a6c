// Kubernetes backend: one pod per session running the agent (kubernetes-manifests.ts), never reused (the pod is named
// after the session and deleted when it ends).
// The gateway reaches the agent at <pod IP>:<port from the pod's `boxyard.io/agent-port` annotation>, and before it
// attaches checks that the pod it started (by UID) still holds that IP: a dead session pod's IP may go to another
// pod. The agent proves itself on every call besides (agent/handshake.ts).
import { readFileSync } from 'node:fs';
import { ApiException, CoreV1Api, KubeConfig, NetworkingV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import type { SessionsConfig, KubernetesBackendConfig } from '../config.ts';
import { inClientSpan } from '@boxyard/kit';
import { NotTheAgentError } from '../agent/client.ts';
import type { AgentSpec, BackendProbe, SessionBackend, StartedAgent } from './types.ts';
import { AGENT_PORT_ANNOTATION, homeClaim, networkPolicyName, podName, sessionNetworkPolicy, sessionPod } from './kubernetes-manifests.ts';

export {
  AGENT_PORT_ANNOTATION, MANAGED_BY, NETWORK_POLICY_NAME, NON_INTERNET_V4, NON_INTERNET_V6, POOL_LABEL, SESSION_POD_LABELS,
  homeClaim, homeClaimName, networkPolicyName, ownerLabel, podName, sessionEgressRules, sessionNetworkPolicy, sessionPod,
} from './kubernetes-manifests.ts';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** A session's resource: `pod/<name> uid:<uid>` (the UID tells this pod from a later one of the same name). */
const podResource = (name: string, uid: string | undefined) => `pod/${name}${uid ? ` uid:${uid}` : ''}`;
export function parsePodResource(resource: string | null): { name: string; uid: string | undefined } | undefined {
  const match = /^pod\/([a-z0-9.-]{1,253})(?: uid:([0-9a-f-]{36}))?$/.exec(resource ?? '');
  return match ? { name: match[1]!, uid: match[2] } : undefined;
}
/** The host part of `host:port` or `[v6]:port`. */
const hostOf = (address: string) => address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '');

const isStatus = (error: unknown, code: number) => error instanceof ApiException && error.code === code;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** The backend's clients and settings, and the NetworkPolicy once ensured (shared by every start). */
interface Cluster {
  config: KubernetesBackendConfig;
  sessions: SessionsConfig;
  namespace: string;
  core: CoreV1Api;
  networking: NetworkingV1Api;
  api<T>(verb: string, resource: string, run: () => Promise<T>): Promise<T>;
  policyReady: Promise<void> | undefined;
}

export function createKubernetesBackend(options: KubernetesBackendOptions): SessionBackend & { namespace: string } {
  const cluster = connect(options);
  return {
    kind: 'kubernetes',
    namespace: cluster.namespace,
    start: (spec, onResource) => startPod(cluster, spec, onResource),
    release: (session) => deletePod(cluster, parsePodResource(session.resource)?.name ?? podName(session.id)),
    verifyAddress: (session) => verifyPodAddress(cluster, session),
    probe: (session) => probePod(cluster, session),
    async close() {},
  };
}

function connect(options: KubernetesBackendOptions): Cluster {
  const { config } = options;
  const kc = new KubeConfig();
  if (config.kubeconfig) kc.loadFromFile(config.kubeconfig);
  else kc.loadFromDefault();
  const namespace = config.namespace ?? defaultNamespace();
  const server = kc.getCurrentCluster()?.server;
  return {
    config,
    sessions: options.sessions,
    namespace,
    core: kc.makeApiClient(CoreV1Api),
    networking: kc.makeApiClient(NetworkingV1Api),
    // Inside a start request's trace, each Kubernetes API call is a CLIENT span (`create pods`), as the operator's are.
    api: (verb, resource, run) =>
      inClientSpan('@boxyard/terminal/kubernetes', `${verb} ${resource}`, { 'k8s.namespace.name': namespace, ...(server ? { 'server.address': new URL(server).hostname } : {}) }, run),
    policyReady: undefined,
  };
}

async function ensureNetworkPolicy({ config, namespace, networking, api }: Cluster): Promise<void> {
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
}

/** The user's home claim, created at their first session; one that exists is theirs already (named by user id). */
async function ensureHomeClaim({ config, namespace, core, api }: Cluster, spec: AgentSpec): Promise<void> {
  try {
    await api('create', 'persistentvolumeclaims', () => core.createNamespacedPersistentVolumeClaim({ namespace, body: homeClaim({ spec, config, namespace }) }));
  } catch (error) {
    if (!isStatus(error, 409)) throw new Error(`cannot create the home volume claim: ${(error as Error).message}`, { cause: error });
  }
}

async function deletePod({ core, namespace, api }: Cluster, name: string): Promise<void> {
  try {
    await api('delete', 'pods', () => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 5 }));
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
}

async function startPod(cluster: Cluster, spec: AgentSpec, onResource?: (resource: string) => void): Promise<StartedAgent> {
  const { config, namespace } = cluster;
  if (config.network_policy) {
    // Fail closed: no session pod without the policy that keeps everyone but the gateway out.
    cluster.policyReady ??= ensureNetworkPolicy(cluster).catch((error: unknown) => {
      cluster.policyReady = undefined;
      throw new Error(`cannot create NetworkPolicy ${networkPolicyName(config)} in ${namespace}: ${(error as Error).message}`, { cause: error });
    });
    await cluster.policyReady;
  }
  if (config.home) await ensureHomeClaim(cluster, spec);
  const name = podName(spec.sessionId);
  const created = await cluster.api('create', 'pods', () =>
    cluster.core.createNamespacedPod({ namespace, body: sessionPod({ spec, config, namespace, sessions: cluster.sessions }) }),
  );
  const resource = podResource(name, created.metadata?.uid);
  onResource?.(resource);
  return { address: await podAddressWhenReady(cluster, name), resource };
}

/** Polls the pod until it is ready (its agent's address), or deletes it when it ends first or takes too long. */
async function podAddressWhenReady(cluster: Cluster, name: string): Promise<string> {
  const { config, core, namespace, api } = cluster;
  const deadline = Date.now() + config.pod_ready_timeout_seconds * 1000;
  let delay = 250;
  for (;;) {
    const pod = await api('get', 'pods', () => core.readNamespacedPod({ name, namespace }));
    if (isReady(pod)) {
      const port = Number(pod.metadata?.annotations?.[AGENT_PORT_ANNOTATION] ?? config.agent_port);
      const ip = pod.status!.podIP!;
      return `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
    }
    const phase = pod.status?.phase;
    if (phase === 'Failed' || phase === 'Succeeded') {
      await deletePod(cluster, name);
      throw new Error(`session pod ${name} ended before it was ready (${phase}${pod.status?.reason ? `: ${pod.status.reason}` : ''})`);
    }
    if (Date.now() > deadline) {
      await deletePod(cluster, name);
      throw new Error(`session pod ${name} not ready within ${config.pod_ready_timeout_seconds} s (phase ${phase ?? 'unknown'})`);
    }
    await sleep(delay);
    delay = Math.min(1000, delay * 2);
  }
}

async function verifyPodAddress({ core, namespace, api }: Cluster, session: { id: string; resource: string | null; address: string }): Promise<void> {
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
}

async function probePod({ core, namespace }: Cluster, session: { id: string; resource: string | null }): Promise<BackendProbe> {
  try {
    const pod = await core.readNamespacedPod({ name: podName(session.id), namespace });
    if (pod.metadata?.deletionTimestamp || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return { state: 'gone', exitCode: terminatedExitCode(pod) };
    return { state: 'present' };
  } catch (error) {
    if (isStatus(error, 404)) return { state: 'gone', exitCode: null };
    throw error;
  }
}
