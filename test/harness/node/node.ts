// A real node next to the local control plane (notes/real-node.md): containerd + runc run the pods, the CNI bridge
// plugin wires them to the boxyard0 bridge, the kubelet registers the node, kube-proxy (iptables) makes Services
// work, CoreDNS answers cluster names, the harness's iptables enforcer (network-policy.ts: why not an upstream one)
// applies NetworkPolicy, local-path-provisioner makes volumes (local-path.ts) and Traefik is the ingress controller
// on 127.0.0.1:80/443. All are local processes from cached builds; images are imported, never pulled.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../ports.ts';
import { tool } from '../tools.ts';
import { NODE } from './network.ts';
import { startNetworkPolicyEnforcer } from './network-policy.ts';
import { STATE_DIRS_FILE } from './teardown.ts';
import { PAUSE_IMAGE, pauseImageArchive } from './pause-image.ts';
import { startLocalPathProvisioner } from './local-path.ts';

const run = promisify(execFile);

/** What the control plane lends the node: its process launcher and its credentials. */
export interface NodeContext {
  dir: string;
  pki: string;
  server: string;
  /** Writes a kubeconfig for the client certificate `<name>.crt` and returns its path. */
  kubeconfigFor(name: string): Promise<string>;
  start(name: string, binary: string, args: string[], env?: Record<string, string>): void;
  waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void>;
  /** kubectl as admin. */
  kubectl(args: string[], stdin?: string): Promise<string>;
  log(line: string): void;
  /** Runs before the control plane stops (in-process parts of the node). */
  onStop(stop: () => Promise<void>): void;
}

export interface RunningNode {
  name: string;
  /** Traefik's entry points on loopback: plain HTTP and TLS. */
  ingress: { http: number; https: number };
  /** name, binary, where, version. */
  describe: [string, string, string, string][];
  /** Imports a docker-archive into the node's containerd (namespace k8s.io, where the kubelet looks). */
  importImage(archive: string): Promise<void>;
  /** Directories that only matter while the node runs (removed by the teardown). */
  ephemeralDirs: string[];
}

const SOCKET = `${NODE.runDir}/containerd.sock`;

export const importImage = async (archive: string, socket = SOCKET): Promise<void> => {
  await run('ctr', ['--address', socket, '--namespace', 'k8s.io', 'images', 'import', '--no-unpack', archive], { maxBuffer: 16 * 1024 * 1024 });
};

function containerdConfig(root: string, cniConf: string): string {
  // restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE; without it runc fails to raise oom_score_adj.
  return `version = 2
root = "${root}"
state = "${NODE.runDir}/containerd"
[grpc]
  address = "${SOCKET}"
[ttrpc]
  address = "${SOCKET}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${cniConf}"
`;
}

function cniConfig(ipamDir: string): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'boxyard',
    plugins: [
      {
        type: 'bridge',
        bridge: NODE.bridge,
        isGateway: true,
        // Without it pods have no default route (and cannot reach Services).
        isDefaultGateway: true,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: NODE.podCidr, gateway: NODE.address }]], dataDir: ipamDir },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  });
}

function kubeletConfig(pki: string, ports: { healthz: number }): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://${SOCKET}
address: ${NODE.address}
port: ${NODE.kubeletPort}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${ports.healthz}
tlsCertFile: ${join(pki, 'kubelet.crt')}
tlsPrivateKeyFile: ${join(pki, 'kubelet.key')}
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: ${join(pki, 'ca.crt')} }
authorization: { mode: Webhook }
clusterDNS: [${NODE.address}]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
# Imported images cannot be pulled again: never collect them; evict only when the disk is really full.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1% }
serializeImagePulls: false
maxPods: 110
`;
}

function kubeProxyConfig(kubeconfig: string, ports: { healthz: number; metrics: number }): string {
  // conntrack 0: change no sysctls; NodePorts only on the bridge address.
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: ${NODE.podCidr}
hostnameOverride: ${NODE.name}
bindAddress: ${NODE.address}
healthzBindAddress: 127.0.0.1:${ports.healthz}
metricsBindAddress: 127.0.0.1:${ports.metrics}
nodePortAddresses: [${NODE.address}/32]
clientConnection: { kubeconfig: ${kubeconfig} }
conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
`;
}

function corefile(kubeconfig: string, port: number): string {
  return `.:53 {
    bind ${NODE.address}
    errors
    health 127.0.0.1:${port}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
}
`;
}

// Traefik reads the API as a ServiceAccount with read access to what an ingress controller needs (its own kubeconfig
// with the account's token: Traefik takes KUBECONFIG, and flags and environment can't be mixed in its static config).
const TRAEFIK_RBAC = `apiVersion: v1
kind: ServiceAccount
metadata: { name: traefik, namespace: kube-system }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: boxyard-ingress-controller }
rules:
- apiGroups: ['']
  resources: [services, secrets, nodes, endpoints]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io, extensions]
  resources: [ingresses, ingressclasses]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io, extensions]
  resources: [ingresses/status]
  verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: boxyard-ingress-controller }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: boxyard-ingress-controller }
subjects:
- { kind: ServiceAccount, name: traefik, namespace: kube-system }
---
# The cluster's default class: Ingresses that name none are Traefik's.
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: traefik
  annotations: { ingressclass.kubernetes.io/is-default-class: "true" }
spec: { controller: traefik.io/ingress-controller }
`;

export async function startNode(ctx: NodeContext): Promise<RunningNode> {
  const { dir, pki } = ctx;
  const nodeDir = join(dir, 'node');
  const kubeletRoot = join(nodeDir, 'kubelet');
  const paths = {
    containerdRoot: join(nodeDir, 'containerd'),
    cniConf: join(nodeDir, 'cni'),
    ipam: join(nodeDir, 'cni-ipam'),
  };
  await Promise.all([...Object.values(paths), kubeletRoot].map((p) => mkdir(p, { recursive: true })));
  await writeFile(STATE_DIRS_FILE, `${kubeletRoot}\n${paths.ipam}\n`);
  await writeFile(join(nodeDir, 'containerd.toml'), containerdConfig(paths.containerdRoot, paths.cniConf));
  await writeFile(join(paths.cniConf, '10-boxyard.conflist'), cniConfig(paths.ipam));

  const started = Date.now();
  ctx.start('containerd', 'containerd', ['--config', join(nodeDir, 'containerd.toml'), '--log-level', 'warn']);
  await ctx.waitFor(
    'containerd',
    () =>
      run('ctr', ['--address', SOCKET, 'version']).then(
        () => true,
        () => false,
      ),
    30_000,
  );
  await importImage(await pauseImageArchive());

  const [kubeletHealthz, proxyHealthz, proxyMetrics, dnsHealth, traefikPing] = await Promise.all(Array.from({ length: 5 }, () => freePort()));
  // The standard ports: services build absolute URLs from their public URL (https://host), which has no port.
  const [ingressHttp, ingressHttps] = [80, 443];
  await writeFile(join(nodeDir, 'kubelet.yaml'), kubeletConfig(pki, { healthz: kubeletHealthz! }));
  ctx.start('kubelet', tool('KUBELET'), [
    `--config=${join(nodeDir, 'kubelet.yaml')}`,
    `--kubeconfig=${await ctx.kubeconfigFor('node')}`,
    `--root-dir=${kubeletRoot}`,
    `--cert-dir=${join(nodeDir, 'kubelet-certs')}`,
    `--hostname-override=${NODE.name}`,
    `--node-ip=${NODE.address}`,
    '--v=1',
  ]);

  const proxyKubeconfig = await ctx.kubeconfigFor('kube-proxy');
  await writeFile(join(nodeDir, 'kube-proxy.yaml'), kubeProxyConfig(proxyKubeconfig, { healthz: proxyHealthz!, metrics: proxyMetrics! }));
  ctx.start('kube-proxy', tool('KUBE_PROXY'), [`--config=${join(nodeDir, 'kube-proxy.yaml')}`]);

  const adminKubeconfig = await ctx.kubeconfigFor('admin');
  await writeFile(join(nodeDir, 'Corefile'), corefile(adminKubeconfig, dnsHealth!));
  ctx.start('coredns', tool('COREDNS'), ['-conf', join(nodeDir, 'Corefile')]);

  const enforcer = startNetworkPolicyEnforcer(adminKubeconfig, ctx.log);
  ctx.onStop(() => enforcer.stop());

  await ctx.waitFor(
    `node ${NODE.name} Ready`,
    async () => {
      const out = await ctx.kubectl(['get', 'node', NODE.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']).catch(() => '');
      return out.trim() === 'True';
    },
    120_000,
  );

  const localPath = await startLocalPathProvisioner(ctx, nodeDir, adminKubeconfig, (archive) => importImage(archive));

  await ctx.kubectl(['apply', '-f', '-'], TRAEFIK_RBAC);
  const token = (await ctx.kubectl(['-n', 'kube-system', 'create', 'token', 'traefik', '--duration=8760h'])).trim();
  const traefikKubeconfig = join(nodeDir, 'traefik.kubeconfig');
  await writeFile(
    traefikKubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'traefik',
      clusters: [{ name: 'local', cluster: { server: ctx.server, 'certificate-authority': join(pki, 'ca.crt') } }],
      users: [{ name: 'traefik', user: { token } }],
      contexts: [{ name: 'traefik', context: { cluster: 'local', user: 'traefik' } }],
    }),
    { mode: 0o600 },
  );
  ctx.start(
    'traefik',
    tool('TRAEFIK'),
    [
      `--entryPoints.web.address=127.0.0.1:${ingressHttp}`,
      `--entryPoints.websecure.address=127.0.0.1:${ingressHttps}`,
      // TLS on 443 for every Ingress, with the certificates of the Secrets their spec.tls names (chosen by SNI).
      '--entryPoints.websecure.http.tls=true',
      `--entryPoints.ping.address=127.0.0.1:${traefikPing}`,
      '--ping=true',
      '--ping.entryPoint=ping',
      '--providers.kubernetesIngress=true',
      '--log.level=WARN',
      '--global.checkNewVersion=false',
      '--global.sendAnonymousUsage=false',
    ],
    { KUBECONFIG: traefikKubeconfig },
  );
  await ctx.waitFor(
    'traefik /ping',
    () =>
      fetch(`http://127.0.0.1:${traefikPing}/ping`).then(
        (r) => r.ok,
        () => false,
      ),
    30_000,
  );
  ctx.log(`node ${NODE.name} Ready with DNS, NetworkPolicy and ingress in ${Date.now() - started} ms`);

  const versionOf = async (binary: string, args: string[], pattern: RegExp) =>
    pattern.exec((await run(binary, args).catch(() => ({ stdout: '' }))).stdout)?.[1] ?? '?';
  const [containerdVersion, runcVersion, kubeVersion, corednsVersion, traefikVersion] = await Promise.all([
    versionOf('containerd', ['--version'], /containerd \S+ (\S+)/),
    versionOf('runc', ['--version'], /runc version (\S+)/),
    versionOf(tool('KUBELET'), ['--version'], /Kubernetes (\S+)/),
    versionOf(tool('COREDNS'), ['-version'], /CoreDNS-(\S+)/),
    versionOf(tool('TRAEFIK'), ['version'], /Version:\s+(\S+)/),
  ]);
  return {
    name: NODE.name,
    ingress: { http: ingressHttp!, https: ingressHttps! },
    importImage: (archive) => importImage(archive),
    ephemeralDirs: [kubeletRoot, paths.ipam],
    describe: [
      ['containerd', '/usr/bin/containerd', `with runc ${runcVersion}, socket ${SOCKET}`, containerdVersion],
      ['kubelet', tool('KUBELET'), `node ${NODE.name} at ${NODE.address}, pods on ${NODE.bridge} ${NODE.podCidr}`, kubeVersion],
      ['kube-proxy', tool('KUBE_PROXY'), 'iptables mode', kubeVersion],
      ['coredns', tool('COREDNS'), `cluster DNS at ${NODE.address}:53`, corednsVersion],
      localPath,
      ['network policy', 'test/harness/node/network-policy.ts', 'iptables, in the harness (no upstream enforcer runs here)', '-'],
      ['traefik', tool('TRAEFIK'), `ingress at http://127.0.0.1:${ingressHttp}, https://127.0.0.1:${ingressHttps}`, traefikVersion],
    ],
  };
}
