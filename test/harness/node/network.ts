// The real node's place on this machine: one bridge, one pod range, one run directory. Only one real node can run
// per machine (kube-proxy's and the kubelet's iptables chains, /var/lib/kubelet/device-plugins and the kubepods
// cgroups are host-wide), so these are fixed, and a claim file says who holds them.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);

export const NODE = {
  name: 'boxyard-node',
  bridge: 'boxyard0',
  /** Pods get addresses here; does not overlap kwok's fake 10.244.0.0/16 nor the service range 10.0.0.0/24. */
  podCidr: '10.245.0.0/16',
  /** The bridge's own address: the node IP, where the apiserver, DNS and the kubelet listen for pods. */
  address: '10.245.0.1',
  serviceCidr: '10.0.0.0/24',
  kubeletPort: 10250,
  /** Short: unix socket paths are limited to 108 bytes. */
  runDir: '/run/boxyard-node',
} as const;

const claimFile = `${NODE.runDir}/owner.pid`;

/** The pid of a live process holding the node, if any. */
export function nodeOwner(): number | undefined {
  if (!existsSync(claimFile)) return undefined;
  const pid = Number(readFileSync(claimFile, 'utf8').trim());
  try {
    process.kill(pid, 0);
    return pid === process.pid ? undefined : pid;
  } catch {
    return undefined;
  }
}

/** Claims the machine's node slot for this process; refuses when another live process holds it. */
export async function claimNode(): Promise<void> {
  const owner = nodeOwner();
  if (owner) {
    throw new Error(
      `a real Boxyard node already runs on this machine (pid ${owner}, ${readFileSync(`/proc/${owner}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}): ` +
        'stop it first (`make cluster-down`); only one node fits on a machine.',
    );
  }
  if (process.getuid?.() !== 0) throw new Error('the real node (kubelet, containerd, iptables) needs root');
  await mkdir(NODE.runDir, { recursive: true, mode: 0o700 });
  await writeFile(claimFile, `${process.pid}\n`);
}

export async function releaseNode(): Promise<void> {
  await rm(claimFile, { force: true });
}

const quiet = (file: string, args: string[]) =>
  run(file, args).then(
    () => true,
    () => false,
  );

/** The bridge with the node address, before anything binds to that address (the apiserver does). */
export async function createBridge(): Promise<void> {
  if (!(await quiet('ip', ['link', 'show', NODE.bridge]))) await run('ip', ['link', 'add', NODE.bridge, 'type', 'bridge']);
  const { stdout } = await run('ip', ['-4', '-o', 'addr', 'show', 'dev', NODE.bridge]);
  if (!stdout.includes(`${NODE.address}/`)) await run('ip', ['addr', 'add', `${NODE.address}/16`, 'dev', NODE.bridge]);
  await run('ip', ['link', 'set', NODE.bridge, 'up']);
  // Pod → Service → pod on the same bridge must pass iptables (kube-proxy's DNAT, kube-router's policies).
  await writeFile('/proc/sys/net/bridge/bridge-nf-call-iptables', '1').catch(
    ignoreError('the bridge module may not be loaded; plain routing works without it'),
  );
  await writeFile('/proc/sys/net/ipv4/ip_forward', '1');
}

export async function deleteBridge(): Promise<void> {
  await quiet('ip', ['link', 'delete', NODE.bridge]);
}
