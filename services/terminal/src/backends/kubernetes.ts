// Kubernetes backend: one pod per session running the agent (kubernetes-manifests.ts), never reused (the pod is named
// after the session and deleted when it ends).
// The gateway reaches the agent at <pod IP>:<port from the pod's `boxyard.io/agent-port` annotation>, and before it
// attaches checks that the pod it started (by UID) still holds that IP: a dead session pod's IP may go to another
// pod. The agent proves itself on every call besides (agent/handshake.ts).
// It talks to the API through the kit's Kubernetes client, the operator's (kit/kube): the same credentials
// (in-cluster service account with its rotating token, or a kubeconfig), TLS, timeouts and request spans.
import { readFileSync } from 'node:fs';
import type { Pod } from 'kubernetes-types/core/v1.d.ts';
import { KubeClient, isConflict } from '@boxyard/kit/kube/client.ts';
import { loadCredentials } from '@boxyard/kit/kube/credentials.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import type { SessionsConfig, KubernetesBackendConfig } from '../config.ts';
import { NotTheAgentError } from '../agent/client.ts';
import type { AgentSpec, BackendProbe, SessionBackend, StartedAgent } from './types.ts';
import { AGENT_PORT_ANNOTATION, homeClaim, networkPolicyName, podName, sessionNetworkPolicy, sessionPod } from './kubernetes-manifests.ts';

export {
  AGENT_PORT_ANNOTATION,
  MANAGED_BY,
  NETWORK_POLICY_NAME,
  NON_INTERNET_V4,
  NON_INTERNET_V6,
  POOL_LABEL,
  SESSION_POD_LABELS,
  homeClaim,
  homeClaimName,
  networkPolicyName,
  ownerLabel,
  podName,
  sessionEgressRules,
  sessionNetworkPolicy,
  sessionPod,
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function defaultNamespace(): string {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

function isReady(pod: Pod): boolean {
  return pod.status?.phase === 'Running' && Boolean(pod.status.podIP) && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function terminatedExitCode(pod: Pod): number | null {
  return pod.status?.containerStatuses?.find((c) => c.name === 'agent')?.state?.terminated?.exitCode ?? null;
}

export interface KubernetesBackendOptions {
  config: KubernetesBackendConfig;
  sessions: SessionsConfig;
  log: { info(message: string): void; warn(message: string): void };
}

/** The backend's client and settings, and the NetworkPolicy once ensured (shared by every start). */
interface Cluster {
  config: KubernetesBackendConfig;
  sessions: SessionsConfig;
  namespace: string;
  client: KubeClient;
  policyReady: Promise<void> | undefined;
}

/** A manifest (typed with the API's own models) as the client's wire object. */
const wire = (object: { apiVersion?: string; kind?: string }): KubeObject => object as unknown as KubeObject;
type PodObject = KubeObject & Pod;
const readPod = (client: KubeClient, namespace: string, name: string) => client.get<PodObject>(resources.pod, namespace, name);

export function createKubernetesBackend(options: KubernetesBackendOptions): SessionBackend & { namespace: string } {
  const cluster = connect(options);
  return {
    kind: 'kubernetes',
    namespace: cluster.namespace,
    start: (spec, onResource) => startPod(cluster, spec, onResource),
    release: (session) => deletePod(cluster, parsePodResource(session.resource)?.name ?? podName(session.id)),
    verifyAddress: (session) => verifyPodAddress(cluster, session),
    probe: (session) => probePod(cluster, session),
    async close() {
      cluster.client.close();
    },
  };
}

function connect(options: KubernetesBackendOptions): Cluster {
  const { config } = options;
  // `kubeconfig` when set, else in the cluster the pod's service account, else $KUBECONFIG or ~/.kube/config.
  const credentials = loadCredentials(config.kubeconfig);
  return {
    config,
    sessions: options.sessions,
    namespace: config.namespace ?? defaultNamespace(),
    // Inside a start request's trace, each API call is a CLIENT span (`create pods`), as the operator's are.
    client: new KubeClient(credentials, { fieldManager: 'boxyard-terminal', userAgent: 'boxyard-terminal', tracerName: '@boxyard/terminal/kubernetes' }),
    policyReady: undefined,
  };
}

async function ensureNetworkPolicy({ config, namespace, client }: Cluster): Promise<void> {
  const policy = sessionNetworkPolicy(config, namespace);
  try {
    await client.create(wire(policy));
  } catch (error) {
    if (!isConflict(error)) throw error;
    // Already there (another replica, an earlier start): keep it in line with the current config. A JSON patch
    // (the Role grants patch, not update) that replaces the whole spec, so no stale selector key survives.
    await client.jsonPatch(resources.networkPolicy, namespace, networkPolicyName(config), [{ op: 'replace', path: '/spec', value: policy.spec }]);
  }
}

/** The user's home claim, created at their first session; one that exists is theirs already (named by user id). */
async function ensureHomeClaim({ config, namespace, client }: Cluster, spec: AgentSpec): Promise<void> {
  try {
    await client.create(wire(homeClaim({ spec, config, namespace })));
  } catch (error) {
    if (!isConflict(error)) throw new Error(`cannot create the home volume claim: ${(error as Error).message}`, { cause: error });
  }
}

async function deletePod({ client, namespace }: Cluster, name: string): Promise<void> {
  await client.delete(resources.pod, namespace, name, { gracePeriodSeconds: 5 });
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
  const created = await cluster.client.create<KubeObject>(wire(sessionPod({ spec, config, namespace, sessions: cluster.sessions })));
  const resource = podResource(name, created.metadata.uid);
  onResource?.(resource);
  return { address: await podAddressWhenReady(cluster, name), resource };
}

/** What the pod's state means for a start: its agent's address, or why it will never have one. */
function readiness(pod: Pod, config: KubernetesBackendConfig): { address: string } | { ended: string } | undefined {
  if (isReady(pod)) {
    const port = Number(pod.metadata?.annotations?.[AGENT_PORT_ANNOTATION] ?? config.agent_port);
    const ip = pod.status!.podIP!;
    return { address: `${ip.includes(':') ? `[${ip}]` : ip}:${port}` };
  }
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return { ended: `${phase}${pod.status?.reason ? `: ${pod.status.reason}` : ''}` };
  return undefined;
}

/**
 * The pod's next version after `resourceVersion`, by a watch on it (as the operator watches): `null` once it is
 * deleted, undefined when the watch ended without news (its timeout, a 410, a dropped connection: read it again).
 */
async function nextPodVersion(
  client: KubeClient,
  namespace: string,
  name: string,
  resourceVersion: string | undefined,
  seconds: number,
): Promise<PodObject | null | undefined> {
  const stop = new AbortController();
  let next: PodObject | null | undefined;
  try {
    await client.watch<PodObject>(
      resources.pod,
      namespace,
      { fieldSelector: `metadata.name=${name}`, resourceVersion, timeoutSeconds: seconds },
      (event) => {
        if (next !== undefined || event.object.kind === 'Status') return;
        if (event.type === 'ADDED' || event.type === 'MODIFIED') next = event.object as PodObject;
        else if (event.type === 'DELETED') next = null;
        else return;
        stop.abort();
      },
      stop.signal,
    );
  } catch {
    // A 410 (the version is too old) or a dropped stream: the caller reads the pod afresh, where a real failure shows.
  }
  // Not in a tight loop when a watch ends at once.
  if (next === undefined) await sleep(250);
  return next;
}

/** Waits (watching the pod) until it is ready and returns its agent's address; deletes it when it ends first or takes too long. */
async function podAddressWhenReady(cluster: Cluster, name: string): Promise<string> {
  const { config, client, namespace } = cluster;
  const deadline = Date.now() + config.pod_ready_timeout_seconds * 1000;
  let pod: PodObject | null | undefined = await readPod(client, namespace, name);
  for (;;) {
    if (!pod) throw new Error(`session pod ${name} was deleted before it was ready`);
    const state = readiness(pod, config);
    if (state && 'address' in state) return state.address;
    if (state) {
      await deletePod(cluster, name);
      throw new Error(`session pod ${name} ended before it was ready (${state.ended})`);
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      await deletePod(cluster, name);
      throw new Error(`session pod ${name} not ready within ${config.pod_ready_timeout_seconds} s (phase ${pod.status?.phase ?? 'unknown'})`);
    }
    const next = await nextPodVersion(client, namespace, name, pod.metadata.resourceVersion, Math.ceil(remaining / 1000));
    pod = next === undefined ? await readPod(client, namespace, name) : next;
  }
}

async function verifyPodAddress({ client, namespace }: Cluster, session: { id: string; resource: string | null; address: string }): Promise<void> {
  const started = parsePodResource(session.resource);
  const name = started?.name ?? podName(session.id);
  const pod = await readPod(client, namespace, name);
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

async function probePod({ client, namespace }: Cluster, session: { id: string; resource: string | null }): Promise<BackendProbe> {
  const pod = await readPod(client, namespace, podName(session.id));
  if (!pod) return { state: 'gone', exitCode: null };
  if (pod.metadata?.deletionTimestamp || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')
    return { state: 'gone', exitCode: terminatedExitCode(pod) };
  return { state: 'present' };
}
