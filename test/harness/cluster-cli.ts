// `make cluster` / `make cluster-down`: a local cluster (apiserver + controllers + one real node with DNS,
// NetworkPolicy and an ingress controller) that outlives the make command. `up` re-spawns this file as a detached
// `serve` process and waits for it to report ready; `down` signals it and removes what the node left on the host.
// State (certificates, etcd data, imported images) lives in $BOXYARD_HOME/cluster (default .boxyard/cluster) and
// survives down/up. `up` imports the image `make image` built last, when there is one.
import { copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from './kube.ts';
import { nodeOwner, releaseNode } from './node/network.ts';
import { teardownNode } from './node/teardown.ts';
import { builtImage } from './clients.ts';
import { runCommand, stopDetached, stopOnSignals, upDetached, type DetachedFiles } from './detached.ts';
import { tool } from './tools.ts';

const self = fileURLToPath(import.meta.url);
const home = process.env.BOXYARD_HOME ? resolve(process.env.BOXYARD_HOME) : join(dirname(self), '..', '..', '.boxyard');
const stateDir = join(home, 'cluster');
const pidFile = join(home, 'cluster.pid');
const readyFile = join(stateDir, 'ready.json');
const serveLog = join(stateDir, 'serve.log');
const kubeconfig = join(home, 'kubeconfig');
/** `kubectl` and `helm`, the pinned builds, to put first on PATH (an alias would lose to another kubectl in scripts). */
const binDir = join(home, 'bin');
const files: DetachedFiles = { script: self, stateDir, pidFile, readyFile, serveLog };

function printUsage(describe: string[]): void {
  console.log(`cluster ready:\n${describe.map((l) => `  - ${l}`).join('\n')}`);
  console.log(`kubeconfig: ${kubeconfig}`);
  console.log(`  export KUBECONFIG=${kubeconfig} PATH=${binDir}:$PATH    # kubectl and helm: the pinned builds`);
  console.log(`kubectl (pinned, matches the apiserver): ${tool('KUBECTL')}`);
  console.log(`  ${tool('KUBECTL')} get nodes`);
  console.log('ingress (Traefik) on 127.0.0.1:80 and :443; point your Ingress hosts there (/etc/hosts or curl --resolve)');
  console.log(`stop it with: make cluster-down (logs in ${stateDir})`);
}

const up = () => upDetached<{ describe: string[] }>(files, 'the cluster', 180_000, (ready) => printUsage(ready.describe));

async function serve(): Promise<void> {
  const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);
  const plane = await startControlPlane({ dir: stateDir, node: true, log });
  try {
    const { image, tar } = builtImage();
    await plane.node!.importImage(tar);
    log(`imported ${image}`);
  } catch (error) {
    log(`no image imported (${(error as Error).message})`);
  }
  copyFileSync(plane.kubeconfig, kubeconfig);
  mkdirSync(binDir, { recursive: true });
  for (const [name, key] of [
    ['kubectl', 'KUBECTL'],
    ['helm', 'HELM'],
  ] as const) {
    rmSync(join(binDir, name), { force: true });
    symlinkSync(tool(key), join(binDir, name));
  }
  writeFileSync(readyFile, JSON.stringify({ server: plane.server, describe: plane.describe() }));
  log(`ready: ${plane.server}`);
  stopOnSignals(log, async () => {
    await plane.stop();
    rmSync(readyFile, { force: true });
  });
}

/** A serve that was killed could not clean up after its node: pods, mounts, iptables rules, the bridge. */
async function removeLeftovers(): Promise<void> {
  if (nodeOwner()) return; // another process (a test run) holds the node
  if (!existsSync(join(stateDir, 'node'))) return; // this checkout never ran a node
  await teardownNode([join(stateDir, 'node', 'kubelet'), join(stateDir, 'node', 'cni-ipam')]);
  await releaseNode();
}

async function down(): Promise<number> {
  const pid = await stopDetached(files, 30_000);
  await removeLeftovers();
  console.log(pid ? `cluster stopped (pid ${pid}); data kept in ${stateDir}` : 'cluster not running');
  return 0;
}

await runCommand('test/harness/cluster-cli.ts', { up, down, serve });
