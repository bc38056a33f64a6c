// The Kubernetes backend on the shared local apiserver. There is no kubelet, so this test plays it: for each
// session pod the gateway creates, it runs the pod's agent locally with the environment from the pod spec,
// then writes the pod's status (Running, Ready, podIP 127.0.0.1) and points the agent-port annotation at the
// agent's port. The gateway code under test is the same as in a cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Pod } from 'kubernetes-types/core/v1.d.ts';
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.d.ts';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { READY_PREFIX } from '../agent/main.ts';
import { ADMIN_PASSWORD, api, createUser, login, openTerminal, startTestGateway } from '../testing/test-gateway.ts';
import { AGENT_PORT_ANNOTATION, NETWORK_POLICY_NAME, POOL_LABEL, networkPolicyName } from './kubernetes.ts';
import { ignoreError } from '@boxyard/kit';

const AGENT_MAIN = fileURLToPath(new URL('../agent/main.ts', import.meta.url));
type PodObject = KubeObject & Pod;
const listPods = async (client: KubeClient, namespace: string, labelSelector: string) =>
  (await client.list<PodObject>(resources.pod, namespace, { labelSelector })).items;

/** Runs the agents of the namespace's session pods on this machine, like a kubelet would in the pods. */
function fakeKubelet(client: KubeClient, namespace: string) {
  const agents = new Map<string, ChildProcess>();
  let stopped = false;

  async function run(pod: PodObject): Promise<void> {
    const name = pod.metadata.name;
    const container = pod.spec!.containers[0]!;
    const env: Record<string, string> = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));
    env.BOXYARD_AGENT_LISTEN = '127.0.0.1:0';
    env.PATH = process.env.PATH ?? '/usr/bin:/bin';
    // securityContext.runAsUser: the shell must not run as root.
    // As root, the agent drops to the pod's run_as_user as in a pod. Not root: it cannot, shell and agent share this
    // uid, and the agent would (rightly) refuse to start; the real-node suite checks the pod's agent.
    if (process.getuid?.() !== 0) {
      delete env.BOXYARD_AGENT_DROP_TO;
      env.BOXYARD_AGENT_PRIVATE_ENVIRONMENT = 'false';
    }
    const child = spawn(process.execPath, [AGENT_MAIN, '--session', env.BOXYARD_AGENT_SESSION_ID ?? name], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    agents.set(name, child);
    const address = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        out += chunk;
        const line = out.split('\n').find((l) => l.startsWith(READY_PREFIX));
        if (line) resolve(line.slice(READY_PREFIX.length).trim());
      });
      child.once('exit', (code) => reject(new Error(`agent for ${name} exited with ${code}`)));
    });
    const port = address.slice(address.lastIndexOf(':') + 1);
    await client.mergePatch(resources.pod, namespace, name, { metadata: { annotations: { [AGENT_PORT_ANNOTATION]: port } } });
    const now = new Date().toISOString();
    await client.mergePatch(
      resources.pod,
      namespace,
      name,
      {
        status: {
          phase: 'Running',
          podIP: '127.0.0.1',
          podIPs: [{ ip: '127.0.0.1' }],
          startTime: now,
          conditions: [
            { type: 'Initialized', status: 'True', lastTransitionTime: now },
            { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
            { type: 'Ready', status: 'True', lastTransitionTime: now },
          ],
        },
      },
      'status',
    );
  }

  const loop = (async () => {
    while (!stopped) {
      // A failed list (the apiserver busy) is retried on the next round, as a kubelet's would be.
      const pods = await listPods(client, namespace, 'app.kubernetes.io/component=terminal-session').catch(() => [] as PodObject[]);
      const present = new Set(pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name));
      for (const pod of pods) {
        const name = pod.metadata.name;
        if (present.has(name) && !agents.has(name)) void run(pod).catch((error: unknown) => console.error('fake kubelet:', error));
      }
      // A deleted pod's container gets SIGTERM.
      for (const [name, child] of agents) {
        if (!present.has(name) && child.exitCode === null) child.kill('SIGTERM');
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();

  return {
    agents,
    async stop() {
      stopped = true;
      await loop;
      // Like a kubelet: SIGTERM, then SIGKILL after the grace period.
      await Promise.all(
        [...agents.values()]
          .filter((child) => child.exitCode === null && child.signalCode === null)
          .map(async (child) => {
            child.kill('SIGTERM');
            const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
            await new Promise((r) => child.once('exit', r));
            clearTimeout(timer);
          }),
      );
    },
  };
}

describe('kubernetes backend (local control plane)', () => {
  const kubeconfig = inject('kubeconfig');
  const namespace = `terminal-${randomBytes(4).toString('hex')}`;
  let client: KubeClient;
  let kubelet: ReturnType<typeof fakeKubelet>;
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let base: string;
  let admin: string;
  let alice: { cookie: string; id: string };
  let sessionId: string;
  let websocketPath: string;

  beforeAll(async () => {
    client = new KubeClient(kubeconfigCredentials(kubeconfig), { fieldManager: 'boxyard-test' });
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    kubelet = fakeKubelet(client, namespace);
    gateway = await startTestGateway(await createTestDatabase('terminal_kube'), {
      backend: {
        kind: 'kubernetes',
        kubernetes: {
          namespace,
          image: 'registry.example/boxyard/terminal-session:test',
          kubeconfig,
          pod_ready_timeout_seconds: 60,
          gateway_pod_labels: { 'app.kubernetes.io/name': 'boxyard-terminal', 'app.kubernetes.io/instance': 'test' },
          pool: 'test',
          egress: { excluded_cidrs: ['203.0.113.0/24'] },
        },
      },
      sessions: { reaper_interval_seconds: 1 },
    });
    base = gateway.url;
    admin = await login(base, 'admin', ADMIN_PASSWORD);
    alice = await createUser(base, admin, 'alice');
  });

  afterAll(async () => {
    if (gateway) {
      for (const session of (await api(base, 'GET', '/api/terminal/sessions', { cookie: admin })).json.data.sessions) await gateway.sessions.stop(session.id);
      await gateway.close();
    }
    await kubelet?.stop();
    await client?.delete(resources.namespace, undefined, namespace).catch(ignoreError('teardown: the namespace may be gone with the run'));
    client?.close();
  });

  it('starts a session in its own pod: a non-root shell, no escalation, no capabilities but the agent’s drop, default seccomp, no token, limits, owner labels', async () => {
    const started = await api(base, 'POST', '/api/terminal/start', { cookie: alice.cookie, body: { terminal_cookie: 'k8s' } });
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    expect(started.json.data).toMatchObject({ reattached: false, session: { state: 'running', backend: 'kubernetes' } });
    sessionId = started.json.data.session.id;
    websocketPath = started.json.data.websocket_path;

    const pods = await listPods(client, namespace, `boxyard.io/session=${sessionId}`);
    expect(pods).toHaveLength(1);
    const pod = pods[0]!;
    expect(pod.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'boxyard',
      'boxyard.io/session': sessionId,
      'boxyard.io/owner': alice.id,
      [POOL_LABEL]: 'test',
    });
    // Root only until the agent drops to run_as_user, before the shell exists; CAP_SETUID/CAP_SETGID for that alone.
    expect(pod.spec).toMatchObject({
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: { runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } },
    });
    const container = pod.spec!.containers[0]!;
    expect(container.image).toBe('registry.example/boxyard/terminal-session:test');
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'], add: ['SETUID', 'SETGID'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.resources?.limits).toMatchObject({ cpu: '1', memory: '512Mi' });
    expect(container.resources?.requests).toMatchObject({ cpu: '100m', memory: '128Mi' });
    // The pod spec holds the gateway's public key and the agent's key, never the session's secret: reading pods lets
    // no one attach. The agent refuses to start where its shell could read them.
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      BOXYARD_AGENT_GATEWAY_KEY: expect.stringMatching(/^[\w-]{43}$/),
      BOXYARD_AGENT_KEY: expect.stringMatching(/^[\w-]{43}$/),
      BOXYARD_AGENT_PRIVATE_ENVIRONMENT: 'true',
      BOXYARD_AGENT_DROP_TO: '1000:1000',
    });
    expect(JSON.stringify(pod)).not.toContain(gateway.sessions.secretOf((await gateway.sessions.store.get(sessionId))!));
  });

  it("admits only the gateway to session pods, and lets shells reach only DNS and public addresses, with the pool's own NetworkPolicy", async () => {
    expect(networkPolicyName({ pool: 'test' })).toBe(`${NETWORK_POLICY_NAME}-test`);
    const policy = (await client.get<KubeObject & NetworkPolicy>(resources.networkPolicy, namespace, `${NETWORK_POLICY_NAME}-test`))!;
    expect(policy.spec?.podSelector?.matchLabels).toMatchObject({ 'app.kubernetes.io/component': 'terminal-session', [POOL_LABEL]: 'test' });
    expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec?.egress).toEqual([
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      {
        to: [
          { ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '203.0.113.0/24'] } },
          { ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10', '64:ff9b::/96'] } },
        ],
      },
    ]);
    expect(policy.spec?.ingress).toEqual([
      {
        from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'boxyard-terminal', 'app.kubernetes.io/instance': 'test' } } }],
        ports: [{ protocol: 'TCP', port: 7681 }],
      },
    ]);
  });

  it('proxies the WebSocket to the agent in the pod', async () => {
    const term = await openTerminal(base, websocketPath, { cookie: alice.cookie });
    term.type('echo $((6*7))\r');
    await term.waitFor(/^42$/m);
    await term.close();
    // Reattach through the proxy replays the pod agent's scrollback.
    const again = await openTerminal(base, websocketPath, { cookie: alice.cookie });
    await again.waitFor(/^42$/m);
    await again.close();
  });

  it("does not attach once the session pod no longer holds the recorded address (its IP may be another pod's now)", async () => {
    const name = `boxyard-term-${sessionId}`;
    const setIp = (ip: string) => client.mergePatch(resources.pod, namespace, name, { status: { podIP: ip, podIPs: [{ ip }] } }, 'status');
    await setIp('127.0.0.2');
    try {
      const term = await openTerminal(base, websocketPath, { cookie: alice.cookie });
      term.type('echo $((6*7))\r');
      // Closed (4500), or attached after all: whichever comes first.
      const outcome = await Promise.race([
        term.closed,
        term.waitFor(/^42$/m).then(
          () => 'attached to the agent',
          () => 'no answer',
        ),
      ]);
      expect(outcome).toMatchObject({ code: 4500 });
    } finally {
      await setIp('127.0.0.1');
    }
    // The pod holds it again: attaching works.
    const term = await openTerminal(base, websocketPath, { cookie: alice.cookie });
    await term.waitFor(/^42$/m);
    await term.close();
  });

  it('deletes the pod on stop, and the next session gets a new pod', async () => {
    const term = await openTerminal(base, websocketPath, { cookie: alice.cookie });
    const stop = await api(base, 'DELETE', `/api/terminal/sessions/${sessionId}/stop`, { cookie: alice.cookie });
    expect(stop.status).toBe(200);
    expect(await term.closed).toEqual({ code: 4300, reason: 'stopped' });
    await expect.poll(async () => (await listPods(client, namespace, `boxyard.io/session=${sessionId}`)).length, { timeout: 20_000 }).toBe(0);

    const next = await api(base, 'POST', '/api/terminal/start', { cookie: alice.cookie, body: { terminal_cookie: 'k8s' } });
    expect(next.json.data.reattached).toBe(false);
    expect(next.json.data.session.id).not.toBe(sessionId);
    const pods = await listPods(client, namespace, 'app.kubernetes.io/component=terminal-session');
    expect(pods.map((p) => p.metadata.labels?.['boxyard.io/session'])).toEqual([next.json.data.session.id]);
  });

  it('ends the session when its pod disappears behind the gateway’s back', async () => {
    const sessions = (await api(base, 'GET', '/api/terminal/sessions', { cookie: alice.cookie })).json.data.sessions;
    const live = sessions[0] as { id: string };
    const [pod] = await listPods(client, namespace, `boxyard.io/session=${live.id}`);
    await client.delete(resources.pod, namespace, pod!.metadata.name);
    await expect
      .poll(
        async () =>
          (await api(base, 'GET', '/api/terminal/sessions?include_ended=true', { cookie: alice.cookie })).json.data.sessions.find(
            (s: { id: string }) => s.id === live.id,
          ),
        { timeout: 30_000, interval: 500 },
      )
      .toMatchObject({ state: 'exited', end_reason: expect.stringMatching(/^(lost|exited)$/) });
  });
});
