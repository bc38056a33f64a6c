// A real Kubernetes control plane on loopback, the way controller-runtime's envtest runs one: etcd + kube-apiserver
// as local processes (no kubelet). With `controllers: true` it adds kube-controller-manager, kube-scheduler and kwok
// (one fake node whose pods kwok marks Running/Ready), so Deployments become Available. With `node: true` it adds a
// real node (node/node.ts) whose pods really run: the apiserver then listens on the node's bridge address, where
// pods can reach it, and authorizes kubelets with the Node authorizer.
// Certificates and etcd data stay in `dir`: starting again on the same dir reuses both (`make cluster`).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';
import { tool } from './tools.ts';
import { kubectlFor } from './clients.ts';
import { kubeconfigYaml, makePki } from './kube-pki.ts';
import { Processes } from './kube-processes.ts';
import { FAKE_NODE, KWOK_STAGES } from './kwok.ts';
import { NODE, claimNode, createBridge, releaseNode } from './node/network.ts';
import { startNode, type RunningNode } from './node/node.ts';
import { teardownNode } from './node/teardown.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);

export interface RunningControlPlane {
  kubeconfig: string;
  server: string;
  /** Present with `node: true`. */
  node?: RunningNode;
  describe(): string[];
  stop(): Promise<void>;
}

interface AdminTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

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

interface ControlPlaneOptions {
  dir: string;
  controllers?: boolean;
  /** A real node (implies controllers); one per machine. */
  node?: boolean;
  log?: (line: string) => void;
}

/** A control plane being started: its processes, what stops it, and the node once claimed and started. */
interface ControlPlane {
  dir: string;
  pki: string;
  withNode: boolean;
  log: (line: string) => void;
  processes: Processes;
  stopHooks: (() => Promise<void>)[];
  claimed: boolean;
  node: RunningNode | undefined;
}

/** An apiserver that answers: where, as whom, and what runs so far (name, binary, where, known version). */
interface Apiserver {
  server: string;
  kubeconfig: string;
  tls: AdminTls;
  described: [string, string, string, string?][];
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<RunningControlPlane> {
  const { dir } = options;
  const log = options.log ?? (() => {});
  const started = Date.now();
  const plane: ControlPlane = {
    dir,
    pki: join(dir, 'pki'),
    withNode: options.node === true,
    log,
    processes: new Processes(dir, log),
    stopHooks: [],
    claimed: false,
    node: undefined,
  };
  const stop = () => stopControlPlane(plane);
  try {
    if (plane.withNode) {
      await claimNode();
      plane.claimed = true;
      await teardownNode([]); // whatever a killed run left behind
      await createBridge();
    }
    const api = await startApiserver(plane);
    log(`kube-apiserver ready at ${api.server} in ${Date.now() - started} ms`);
    if (options.controllers || plane.withNode) startControllers(plane, api);
    if (plane.withNode) {
      // Pods go to the real node only: a fake node kept in etcd by an earlier kwok cluster would take some.
      await admin(api.server, api.tls, 'DELETE', `/api/v1/nodes/${FAKE_NODE.metadata.name}`);
    } else if (options.controllers) {
      await startKwok(plane, api);
      log(`controllers started in ${Date.now() - started} ms`);
    }
    if (plane.withNode) await startRealNode(plane, api);
    const versions = await Promise.all(api.described.map(([, binary, , known]) => (known === undefined ? version(binary) : Promise.resolve(known))));
    const lines = api.described.map(([name, binary, where], i) => `${name} ${versions[i]} (${binary})${where ? ` ${where}` : ''}`);
    return { kubeconfig: api.kubeconfig, server: api.server, node: plane.node, describe: () => [...lines], stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function stopControlPlane(plane: ControlPlane): Promise<void> {
  plane.processes.markStopping();
  // In-process parts first (the network policy enforcer), while the apiserver still answers.
  for (const hook of plane.stopHooks.splice(0).reverse()) await hook().catch(ignoreError('stopping: every hook runs even if one fails'));
  await plane.processes.stopAll();
  // Only a node we claimed: a start refused because another process holds the node must leave that one alone.
  if (plane.claimed) {
    await teardownNode(plane.node?.ephemeralDirs ?? []);
    await releaseNode();
  }
}

/** etcd and kube-apiserver, until the apiserver is ready and has its `default` namespace; writes the kubeconfig. */
async function startApiserver({ dir, pki, withNode, processes }: ControlPlane): Promise<Apiserver> {
  await mkdir(join(dir, 'etcd'), { recursive: true });
  const [etcdBin, apiserverBin] = [tool('ETCD'), tool('KUBE_APISERVER')];
  const [, etcdPort, peerPort, apiPort] = await Promise.all([makePki(pki), freePort(), freePort(), freePort()]);

  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  processes.start('etcd', etcdBin, [
    '--name=boxyard',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=boxyard=${peerUrl}`,
    '--unsafe-no-fsync',
    '--log-level=warn',
  ]);

  // Started right away, not after etcd is healthy: the apiserver retries etcd while it loads, which saves a second.
  // With a node, the apiserver lives on the bridge address: the host reaches it there, and so do pods (through the
  // `kubernetes` Service, whose endpoint is the advertise address).
  const host = withNode ? NODE.address : '127.0.0.1';
  const server = `https://${host}:${apiPort}`;
  processes.start('kube-apiserver', apiserverBin, apiserverArgs({ dir, pki, withNode, etcdUrl, host, apiPort }));

  const tls: AdminTls = { ca: readFileSync(join(pki, 'ca.crt')), cert: readFileSync(join(pki, 'admin.crt')), key: readFileSync(join(pki, 'admin.key')) };
  await processes.waitFor(
    'etcd /health',
    () =>
      fetch(`${etcdUrl}/health`).then(
        (r) => r.ok,
        () => false,
      ),
    30_000,
  );
  // /readyz covers etcd, the RBAC bootstrap roles and the other post-start hooks, but not the apiserver's own
  // system-namespaces controller: wait for `default` too, tests create objects right away.
  await processes.waitFor('kube-apiserver /readyz', async () => (await admin(server, tls, 'GET', '/readyz')) === 200, 60_000);
  await processes.waitFor('the default namespace', async () => (await admin(server, tls, 'GET', '/api/v1/namespaces/default')) === 200, 30_000);

  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, kubeconfigYaml(server, pki), { mode: 0o600 });
  const described: Apiserver['described'] = [
    ['etcd', etcdBin, `at ${etcdUrl}`],
    ['kube-apiserver', apiserverBin, `at ${server}`],
  ];
  return { server, kubeconfig, tls, described };
}

function apiserverArgs({
  dir,
  pki,
  withNode,
  etcdUrl,
  host,
  apiPort,
}: {
  dir: string;
  pki: string;
  withNode: boolean;
  etcdUrl: string;
  host: string;
  apiPort: number;
}): string[] {
  return [
    `--etcd-servers=${etcdUrl}`,
    `--bind-address=${host}`,
    `--advertise-address=${host}`,
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, 'apiserver-certs')}`,
    `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
    `--client-ca-file=${join(pki, 'ca.crt')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged',
    ...(withNode
      ? [
          // Real pods: ServiceAccount admission mounts tokens; kubelets are authorized as nodes and reached by IP.
          '--authorization-mode=Node,RBAC',
          '--enable-admission-plugins=NodeRestriction',
          `--kubelet-client-certificate=${join(pki, 'apiserver-kubelet-client.crt')}`,
          `--kubelet-client-key=${join(pki, 'apiserver-kubelet-client.key')}`,
          `--kubelet-certificate-authority=${join(pki, 'ca.crt')}`,
          '--kubelet-preferred-address-types=InternalIP',
        ]
      : ['--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount']),
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
    '--profiling=false',
  ];
}

function startControllers({ pki, withNode, processes }: ControlPlane, { kubeconfig, described }: Apiserver): void {
  const [kcm, scheduler] = [tool('KUBE_CONTROLLER_MANAGER'), tool('KUBE_SCHEDULER')];
  processes.start('kube-controller-manager', kcm, [
    `--kubeconfig=${kubeconfig}`,
    '--secure-port=0', // no serving endpoint needed (and no delegated authn lookups)
    '--leader-elect=false',
    // Everything that runs without a cloud provider; the cloud ones are off by default already.
    '--controllers=*,-cloud-node-lifecycle-controller,-node-route-controller,-service-lb-controller',
    `--service-account-private-key-file=${join(pki, 'sa.key')}`,
    `--root-ca-file=${join(pki, 'ca.crt')}`,
    `--cluster-signing-cert-file=${join(pki, 'ca.crt')}`,
    `--cluster-signing-key-file=${join(pki, 'ca.key')}`,
    '--use-service-account-credentials=false',
    ...(withNode ? ['--node-monitor-grace-period=40s'] : []),
  ]);
  processes.start('kube-scheduler', scheduler, [`--kubeconfig=${kubeconfig}`, '--secure-port=0', '--leader-elect=false']);
  described.push(['kube-controller-manager', kcm, ''], ['kube-scheduler', scheduler, '']);
}

/** kwok and its one fake node, whose pods it marks Running/Ready. */
async function startKwok({ dir, processes }: ControlPlane, { server, kubeconfig, tls, described }: Apiserver): Promise<void> {
  const kwok = tool('KWOK');
  await writeFile(join(dir, 'kwok.yaml'), KWOK_STAGES);
  processes.start('kwok', kwok, [
    `--kubeconfig=${kubeconfig}`,
    `--config=${join(dir, 'kwok.yaml')}`,
    '--manage-all-nodes=false',
    '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
    '--cidr=10.244.0.0/16',
    '--node-ip=10.1.0.1',
    '--node-lease-duration-seconds=40',
  ]);
  // Create (or keep) the fake node; 409 means it survived in etcd from a previous run.
  const status = await admin(server, tls, 'POST', '/api/v1/nodes', FAKE_NODE);
  if (status !== 201 && status !== 409) throw new Error(`creating the kwok node failed with HTTP ${status}`);
  described.push(['kwok', kwok, 'managing node kwok-node-0']);
}

async function startRealNode(plane: ControlPlane, { server, kubeconfig, described }: Apiserver): Promise<void> {
  const { dir, pki, log, processes } = plane;
  plane.node = await startNode({
    dir,
    pki,
    server,
    log,
    kubectl: kubectlFor(kubeconfig),
    onStop: (hook) => void plane.stopHooks.push(hook),
    start: (name, binary, args, env) => processes.start(name, binary, args, env),
    waitFor: (what, check, timeoutMs) => processes.waitFor(what, check, timeoutMs),
    kubeconfigFor: async (user) => {
      const file = join(dir, `${user}.kubeconfig`);
      await writeFile(file, kubeconfigYaml(server, pki, user), { mode: 0o600 });
      return file;
    },
  });
  described.push(...plane.node.describe);
}
