// Leaves the machine as it was before the node started: no pod process, no mount, no network namespace, no
// iptables chain or ipset of the node's components, no kubepods cgroup, no bridge. Idempotent, and also run before
// a node starts (a killed test run leaves all of these behind).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { NODE, deleteBridge } from './network.ts';

const quiet = (file: string, args: string[], input?: string) =>
  new Promise<string>((resolve) => {
    const child = execFile(file, args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => resolve(error ? '' : stdout));
    if (input !== undefined) child.stdin?.end(input);
  });

const CGROUP_ROOT = '/sys/fs/cgroup';

/** Every kubepods cgroup directory, deepest first (cgroup v1: one tree per controller; v2: one tree). */
function kubepodsCgroups(): string[] {
  const roots: string[] = [];
  if (existsSync(join(CGROUP_ROOT, 'kubepods'))) roots.push(join(CGROUP_ROOT, 'kubepods'));
  for (const controller of existsSync(CGROUP_ROOT) ? readdirSync(CGROUP_ROOT) : []) {
    const dir = join(CGROUP_ROOT, controller, 'kubepods');
    if (existsSync(dir)) roots.push(dir);
  }
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name));
    out.push(dir);
  };
  for (const root of roots) walk(root);
  return out;
}

function killPodProcesses(): number {
  const pids = new Set<number>();
  for (const dir of kubepodsCgroups()) {
    try {
      for (const pid of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) pids.add(Number(pid));
    } catch {
      /* gone already */
    }
  }
  // The shims of our containerd (their -address is under the run dir) outlive it; pods' processes are in kubepods.
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('containerd-shim') && cmdline.includes(NODE.runDir)) pids.add(Number(entry));
    } catch {
      /* exited */
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* exited */
    }
  }
  return pids.size;
}

/** Unmounts everything mounted below any of `prefixes`, deepest first. */
async function unmountBelow(prefixes: string[]): Promise<void> {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => Boolean(p) && prefixes.some((prefix) => p!.startsWith(`${prefix}/`) || p === prefix))
    .sort((a, b) => b.length - a.length);
  for (const point of points) await quiet('umount', ['-l', point]);
}

const OUR_CHAINS = /KUBE-|CNI-|BOXYARD-N/;

/** Drops every chain and rule of kube-proxy, the kubelet, the policy enforcer and the CNI plugins, in one restore per family. */
async function removeIptablesRules(): Promise<void> {
  for (const [save, restore] of [
    ['iptables-save', 'iptables-restore'],
    ['ip6tables-save', 'ip6tables-restore'],
  ] as const) {
    const rules = await quiet(save, []);
    if (!OUR_CHAINS.test(rules)) continue;
    await quiet(
      restore,
      [],
      rules
        .split('\n')
        .filter((line) => !OUR_CHAINS.test(line))
        .join('\n') + '\n',
    );
  }
  const sets = (await quiet('ipset', ['list', '-n'])).split('\n').filter((name) => name.startsWith('boxyard-np-'));
  for (const set of sets) await quiet('ipset', ['destroy', set]);
}

async function deletePodNetworkNamespaces(): Promise<void> {
  const dir = '/run/netns';
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) if (name.startsWith('cni-')) await quiet('ip', ['netns', 'delete', name]);
}

/** Where a running node lists the directories that only matter while it runs. */
export const STATE_DIRS_FILE = `${NODE.runDir}/state-dirs`;

/** The kubelet writes here whatever its --root-dir; nothing else on a test machine does. */
const KUBELET_HOST_PATHS = [
  '/var/lib/kubelet/device-plugins',
  '/var/lib/kubelet/plugins_registry',
  '/var/lib/kubelet/plugins',
  '/var/lib/kubelet/pod-resources',
  '/var/log/pods',
  '/var/log/containers',
];

/** `stateDirs`: what the node keeps only while it runs (the kubelet's root dir); containerd's images stay. */
export async function teardownNode(given: string[]): Promise<void> {
  // The dirs a node recorded when it started: a run killed before its own teardown leaves mounts there.
  const recorded = existsSync(STATE_DIRS_FILE) ? readFileSync(STATE_DIRS_FILE, 'utf8').split('\n').filter(Boolean) : [];
  const stateDirs = [...new Set([...given, ...recorded])];
  killPodProcesses();
  await new Promise((r) => setTimeout(r, 200));
  killPodProcesses();
  await unmountBelow([NODE.runDir, ...stateDirs]);
  await deletePodNetworkNamespaces();
  await removeIptablesRules();
  for (const dir of kubepodsCgroups()) {
    try {
      rmdirSync(dir);
    } catch {
      /* a process still inside, or already gone */
    }
  }
  await deleteBridge();
  for (const path of KUBELET_HOST_PATHS) await rm(path, { recursive: true, force: true });
  try {
    if (readdirSync('/var/lib/kubelet').length === 0) rmdirSync('/var/lib/kubelet');
  } catch {
    /* not there */
  }
  for (const dir of stateDirs) if (existsSync(dir) && statSync(dir).isDirectory()) await rm(dir, { recursive: true, force: true });
  // Everything but the claim (releaseNode drops it): a starting node tears down first, holding its claim.
  for (const entry of existsSync(NODE.runDir) ? readdirSync(NODE.runDir) : []) {
    if (entry !== 'owner.pid') await rm(join(NODE.runDir, entry), { recursive: true, force: true });
  }
}
