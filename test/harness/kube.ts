// A real Kubernetes control plane on loopback, the way controller-runtime's envtest runs one: etcd + kube-apiserver
// as local processes (no kubelet). With `controllers: true` it adds kube-controller-manager, kube-scheduler and kwok
// (one fake node whose pods kwok marks Running/Ready), so Deployments become Available. With `node: true` it adds a
// real node (node/node.ts) whose pods really run: the apiserver then listens on the node's bridge address, where
// pods can reach it, and authorizes kubelets with the Node authorizer.
// Certificates and etcd data stay in `dir`: starting again on the same dir reuses both (`make cluster`).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';
import { tool } from './tools.ts';
import { kubectlFor } from './clients.ts';
import { NODE, claimNode, createBridge, releaseNode } from './node/network.ts';
import { startNode, type RunningNode } from './node/node.ts';
import { teardownNode } from './node/teardown.ts';

const run = promisify(execFile);

export interface RunningControlPlane {
  kubeconfig: string;
  server: string;
  /** Present with `node: true`. */
  node?: RunningNode;
  describe(): string[];
  stop(): Promise<void>;
}

interface Component {
  name: string;
  binary: string;
  child: ChildProcess;
  logFile: string;
  exited: Promise<void>;
  exitCode?: number; // set once it has exited
}

// Children must not outlive this Node process: 'exit' handlers run synchronously, so SIGKILL is all we can do.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// One openssl config for every certificate; the `-extensions` section picks the profile.
const OPENSSL_CNF = `[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,IP:10.245.0.1,DNS:boxyard-node,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
`;

/** CA, apiserver serving cert, admin client cert (system:masters) and the service-account key pair (P-256: fast). */
async function makePki(pki: string): Promise<void> {
  if (existsSync(join(pki, PKI_DONE))) return; // reuse: a restarted cluster keeps its identity
  await mkdir(pki, { recursive: true });
  const cnf = join(pki, 'openssl.cnf');
  await writeFile(cnf, OPENSSL_CNF);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '3650'];
  const cert = (name: string, profile: string, subject: string, signed: boolean) =>
    run('openssl', [
      'req', '-x509', '-config', cnf, '-extensions', profile, ...ec, '-subj', subject,
      '-keyout', join(pki, `${name}.key`), '-out', join(pki, `${name}.crt`),
      ...(signed ? ['-CA', join(pki, 'ca.crt'), '-CAkey', join(pki, 'ca.key')] : []),
    ]);
  await cert('ca', 'ca', '/CN=boxyard-local-ca', false);
  await Promise.all([
    cert('apiserver', 'server', '/CN=kube-apiserver', true),
    cert('admin', 'client', '/O=system:masters/CN=boxyard-admin', true),
    // The real node: the kubelet's client (Node authorizer) and serving certificates, kube-proxy's client, and the
    // apiserver's client for logs/exec/port-forward on the kubelet.
    cert('node', 'client', `/O=system:nodes/CN=system:node:${NODE.name}`, true),
    cert('kubelet', 'server', `/CN=${NODE.name}`, true),
    cert('kube-proxy', 'client', '/CN=system:kube-proxy', true),
    cert('apiserver-kubelet-client', 'client', '/O=system:masters/CN=kube-apiserver-kubelet-client', true),
    run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', join(pki, 'sa.key')]).then(
      () => run('openssl', ['pkey', '-in', join(pki, 'sa.key'), '-pubout', '-out', join(pki, 'sa.pub')]),
    ),
  ]);
  await writeFile(join(pki, PKI_DONE), '');
}
/** Bumped when the set of certificates changes: an older cluster directory gets a new PKI. */
const PKI_DONE = 'done-2';

function kubeconfigYaml(server: string, pki: string, user = 'admin'): string {
  const b64 = (f: string) => readFileSync(join(pki, f)).toString('base64');
  return `apiVersion: v1
kind: Config
clusters:
- name: boxyard-local
  cluster:
    server: ${server}
    certificate-authority-data: ${b64('ca.crt')}
users:
- name: boxyard-admin
  user:
    client-certificate-data: ${b64(`${user}.crt`)}
    client-key-data: ${b64(`${user}.key`)}
contexts:
- name: boxyard-local
  context:
    cluster: boxyard-local
    user: boxyard-admin
current-context: boxyard-local
`;
}

interface AdminTls { ca: Buffer; cert: Buffer; key: Buffer }

/** One request to the apiserver as admin; resolves with the status code (0 when it does not answer). */
function admin(server: string, tls: AdminTls, method: string, path: string, body?: unknown): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`${server}${path}`, { method, headers: { 'content-type': 'application/json' }, timeout: 2000, ...tls }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The version a binary reports: `etcd Version: 3.6.16`, `Kubernetes v1.36.3`, `kwok version v0.8.0 ...`. */
async function version(binary: string): Promise<string> {
  try {
    const { stdout } = await run(binary, ['--version']);
    return /(?:etcd Version: |Kubernetes |kwok version )(\S+)/.exec(stdout)?.[1] ?? '?';
  } catch {
    return '?';
  }
}

// A kwok-managed node: no taint, so every pod may land on it; kwok keeps it Ready and its pods Running.
const FAKE_NODE = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'kwok-node-0',
    annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' },
    labels: { 'kubernetes.io/hostname': 'kwok-node-0', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
  },
  status: {
    allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
    capacity: { cpu: '32', memory: '256Gi', pods: '110' },
  },
};

// kwok's simulation stages. The kwok binary has none built in (kwokctl injects them), so these are upstream's
// kustomize/stage/{node/fast,node/heartbeat-with-lease,pod/fast} of kwok v0.8.0, condensed.
const KWOK_STAGES = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: node-initialize }
spec:
  resourceRef: { apiGroup: v1, kind: Node }
  selector:
    matchExpressions:
    - { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True'] }
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      {{ with NodeIP }}
      - { address: {{ . | Quote }}, type: InternalIP }
      {{ end }}
      {{ with NodeName }}
      - { address: {{ . | Quote }}, type: Hostname }
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        { cpu: 1k, memory: 1Ti, pods: 1M }
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        { cpu: 1k, memory: 1Ti, pods: 1M }
      {{ end }}
      {{ $v := printf "kwok-%s" Version }}
      nodeInfo: { architecture: amd64, bootID: "", containerRuntimeVersion: {{ $v }}, kernelVersion: {{ $v }}, kubeProxyVersion: {{ $v }}, kubeletVersion: {{ $v }}, machineID: "", operatingSystem: linux, osImage: "", systemUUID: "" }
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: node-heartbeat-with-lease }
spec:
  resourceRef: { apiGroup: v1, kind: Node }
  selector:
    matchExpressions:
    - { key: .status.phase, operator: In, values: [Running] }
    - { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: In, values: ['True'] }
  delay: { durationMilliseconds: 600000, jitterDurationMilliseconds: 610000 }
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-ready }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
    - { key: .metadata.deletionTimestamp, operator: DoesNotExist }
    - { key: .status.phase, operator: In, values: [Pending] }
    - { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True'] }
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized }
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready }
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady }
      {{ range .spec.readinessGates }}
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: {{ .conditionType | Quote }} }
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, state: { running: { startedAt: {{ $now | Quote }} } } }
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      {{ if eq .restartPolicy "Always" }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, started: true, state: { running: { startedAt: {{ $now | Quote }} } } }
      {{ else }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, state: { terminated: { exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }} } } }
      {{ end }}
      {{ end }}
      {{ with NodeIPsWith .spec.nodeName }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-complete }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
    - { key: .metadata.deletionTimestamp, operator: DoesNotExist }
    - { key: .status.phase, operator: In, values: [Running] }
    - { key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job] }
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, started: false, state: { terminated: { exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }} } } }
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-delete }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
    - { key: .metadata.deletionTimestamp, operator: Exists }
  next:
    delete: true
`;

export async function startControlPlane(options: {
  dir: string;
  controllers?: boolean;
  /** A real node (implies controllers); one per machine. */
  node?: boolean;
  log?: (line: string) => void;
}): Promise<RunningControlPlane> {
  const { dir } = options;
  const log = options.log ?? (() => {});
  const started = Date.now();
  const pki = join(dir, 'pki');
  const components: Component[] = [];
  let stopping = false;

  const withNode = options.node === true;
  const start = (name: string, binary: string, args: string[], env?: Record<string, string>): Component => {
    const logFile = join(dir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    const child = spawn(binary, args, { stdio: ['ignore', fd, fd], env: env ? { ...process.env, ...env } : process.env });
    closeSync(fd); // the child holds its own copy
    track(child);
    const component: Component = { name, binary, child, logFile, exited: Promise.resolve() };
    component.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        component.exitCode = code ?? -1;
        if (!stopping) log(`${name} exited (${signal ?? code}); log: ${logFile}`);
        resolve();
      });
      // A process that could not be spawned emits 'error' and never 'exit'.
      child.once('error', (error) => {
        component.exitCode = -1;
        log(`${name}: ${error.message}`);
        resolve();
      });
    });
    components.push(component);
    return component;
  };

  const stopHooks: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    stopping = true;
    // In-process parts first (the network policy enforcer), while the apiserver still answers.
    for (const hook of stopHooks.splice(0).reverse()) await hook().catch(() => {});
    // Controllers first, so they do not log errors against a vanishing apiserver; etcd last.
    for (const c of [...components].reverse()) {
      if (c.exitCode !== undefined) continue;
      c.child.kill('SIGTERM');
      const timer = setTimeout(() => c.child.kill('SIGKILL'), 5000);
      await c.exited;
      clearTimeout(timer);
    }
    // Only a node we claimed: a start refused because another process holds the node must leave that one alone.
    if (claimed) {
      await teardownNode(node?.ephemeralDirs ?? []);
      await releaseNode();
    }
  };
  let node: RunningNode | undefined;
  let claimed = false;

  /** Polls `check` until true; fails early, with the log tail, when a component exits. */
  const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const dead = components.find((c) => c.exitCode !== undefined);
      if (dead) throw new Error(`${dead.name} exited (code ${dead.exitCode}) while waiting for ${what}; ${dead.logFile}:\n${tail(dead.logFile)}`);
      if (await check()) return;
      if (Date.now() > deadline) {
        const last = components.at(-1);
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}` + (last ? `; ${last.logFile}:\n${tail(last.logFile)}` : ''));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  try {
    if (withNode) {
      await claimNode();
      claimed = true;
      await teardownNode([]); // whatever a killed run left behind
      await createBridge();
    }
    await mkdir(join(dir, 'etcd'), { recursive: true });
    const [etcdBin, apiserverBin] = [tool('ETCD'), tool('KUBE_APISERVER')];
    const [, etcdPort, peerPort, apiPort] = await Promise.all([makePki(pki), freePort(), freePort(), freePort()]);

    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    start('etcd', etcdBin, [
      '--name=boxyard', `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`, `--initial-advertise-peer-urls=${peerUrl}`, `--initial-cluster=boxyard=${peerUrl}`,
      '--unsafe-no-fsync', '--log-level=warn',
    ]);

    // Started right away, not after etcd is healthy: the apiserver retries etcd while it loads, which saves a second.
    // With a node, the apiserver lives on the bridge address: the host reaches it there, and so do pods (through the
    // `kubernetes` Service, whose endpoint is the advertise address).
    const host = withNode ? NODE.address : '127.0.0.1';
    const server = `https://${host}:${apiPort}`;
    start('kube-apiserver', apiserverBin, [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${host}`, `--advertise-address=${host}`, `--secure-port=${apiPort}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`, `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${join(pki, 'ca.crt')}`,
      '--service-cluster-ip-range=10.0.0.0/24', '--allow-privileged',
      ...(withNode
        ? [
            // Real pods: ServiceAccount admission mounts tokens; kubelets are authorized as nodes and reached by IP.
            '--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction',
            `--kubelet-client-certificate=${join(pki, 'apiserver-kubelet-client.crt')}`, `--kubelet-client-key=${join(pki, 'apiserver-kubelet-client.key')}`,
            `--kubelet-certificate-authority=${join(pki, 'ca.crt')}`, '--kubelet-preferred-address-types=InternalIP',
          ]
        : ['--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount']),
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--profiling=false',
    ]);

    const tls: AdminTls = { ca: readFileSync(join(pki, 'ca.crt')), cert: readFileSync(join(pki, 'admin.crt')), key: readFileSync(join(pki, 'admin.key')) };
    await waitFor('etcd /health', () => fetch(`${etcdUrl}/health`).then((r) => r.ok, () => false), 30_000);
    // /readyz covers etcd, the RBAC bootstrap roles and the other post-start hooks, but not the apiserver's own
    // system-namespaces controller: wait for `default` too, tests create objects right away.
    await waitFor('kube-apiserver /readyz', async () => (await admin(server, tls, 'GET', '/readyz')) === 200, 60_000);
    await waitFor('the default namespace', async () => (await admin(server, tls, 'GET', '/api/v1/namespaces/default')) === 200, 30_000);

    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, kubeconfigYaml(server, pki), { mode: 0o600 });
    log(`kube-apiserver ready at ${server} in ${Date.now() - started} ms`);

    // name, binary, where, and the version when the binary has no `--version` of the usual shape.
    const described: [string, string, string, string?][] = [
      ['etcd', etcdBin, `at ${etcdUrl}`],
      ['kube-apiserver', apiserverBin, `at ${server}`],
    ];

    if (options.controllers || withNode) {
      const [kcm, scheduler] = [tool('KUBE_CONTROLLER_MANAGER'), tool('KUBE_SCHEDULER')];
      start('kube-controller-manager', kcm, [
        `--kubeconfig=${kubeconfig}`,
        '--secure-port=0', // no serving endpoint needed (and no delegated authn lookups)
        '--leader-elect=false',
        // Everything that runs without a cloud provider; the cloud ones are off by default already.
        '--controllers=*,-cloud-node-lifecycle-controller,-node-route-controller,-service-lb-controller',
        `--service-account-private-key-file=${join(pki, 'sa.key')}`,
        `--root-ca-file=${join(pki, 'ca.crt')}`,
        `--cluster-signing-cert-file=${join(pki, 'ca.crt')}`, `--cluster-signing-key-file=${join(pki, 'ca.key')}`,
        '--use-service-account-credentials=false',
        ...(withNode ? ['--node-monitor-grace-period=40s'] : []),
      ]);
      start('kube-scheduler', scheduler, [`--kubeconfig=${kubeconfig}`, '--secure-port=0', '--leader-elect=false']);
      described.push(['kube-controller-manager', kcm, ''], ['kube-scheduler', scheduler, '']);
    }

    if (withNode) {
      // Pods go to the real node only: a fake node kept in etcd by an earlier kwok cluster would take some.
      await admin(server, tls, 'DELETE', `/api/v1/nodes/${FAKE_NODE.metadata.name}`);
    } else if (options.controllers) {
      const kwok = tool('KWOK');
      await writeFile(join(dir, 'kwok.yaml'), KWOK_STAGES);
      start('kwok', kwok, [
        `--kubeconfig=${kubeconfig}`, `--config=${join(dir, 'kwok.yaml')}`,
        '--manage-all-nodes=false',
        '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
        '--cidr=10.244.0.0/16', '--node-ip=10.1.0.1', '--node-lease-duration-seconds=40',
      ]);
      // Create (or keep) the fake node; 409 means it survived in etcd from a previous run.
      const status = await admin(server, tls, 'POST', '/api/v1/nodes', FAKE_NODE);
      if (status !== 201 && status !== 409) throw new Error(`creating the kwok node failed with HTTP ${status}`);
      described.push(['kwok', kwok, 'managing node kwok-node-0']);
      log(`controllers started in ${Date.now() - started} ms`);
    }

    if (withNode) {
      node = await startNode({
        dir, pki, server, log, kubectl: kubectlFor(kubeconfig),
        onStop: (hook) => void stopHooks.push(hook),
        start: (name, binary, args, env) => void start(name, binary, args, env),
        waitFor,
        kubeconfigFor: async (user) => {
          const file = join(dir, `${user}.kubeconfig`);
          await writeFile(file, kubeconfigYaml(server, pki, user), { mode: 0o600 });
          return file;
        },
      });
      described.push(...node.describe);
    }

    const versions = await Promise.all(described.map(([, binary, , known]) => known ?? version(binary)));
    const lines = described.map(([name, binary, where], i) => `${name} ${versions[i]} (${binary})${where ? ` ${where}` : ''}`);

    return { kubeconfig, server, node, describe: () => [...lines], stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
