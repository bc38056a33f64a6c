// `make cluster` / `make cluster-down`: a local cluster (apiserver + controllers + one real node with DNS,
// NetworkPolicy and an ingress controller) that outlives the make command. `up` re-spawns this file as a detached
// `serve` process and waits for it to report ready; `down` signals it and removes what the node left on the host.
// State (certificates, etcd data, imported images) lives in $BOXYARD_HOME/cluster (default .boxyard/cluster) and
// survives down/up. `up` imports the image `make image` built last, when there is one.
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from './kube.ts';
import { nodeOwner, releaseNode } from './node/network.ts';
import { teardownNode } from './node/teardown.ts';
import { builtImage } from './clients.ts';
import { tool } from './tools.ts';

const self = fileURLToPath(import.meta.url);
const home = process.env.BOXYARD_HOME ? resolve(process.env.BOXYARD_HOME) : join(dirname(self), '..', '..', '.boxyard');
const stateDir = join(home, 'cluster');
const pidFile = join(home, 'cluster.pid');
const readyFile = join(stateDir, 'ready.json');
const serveLog = join(stateDir, 'serve.log');
const kubeconfig = join(home, 'kubeconfig');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pid of a running `serve`, if any (a stale pid file, or a pid reused by another program, counts as none). */
function runningPid(): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('cluster-cli') ? pid : undefined;
  } catch {
    return undefined;
  }
}

function printUsage(describe: string[]): void {
  console.log(`cluster ready:\n${describe.map((l) => `  - ${l}`).join('\n')}`);
  console.log(`kubeconfig: ${kubeconfig}`);
  console.log(`  export KUBECONFIG=${kubeconfig}`);
  console.log(`kubectl (pinned, matches the apiserver): ${tool('KUBECTL')}`);
  console.log(`  ${tool('KUBECTL')} get nodes`);
  console.log('ingress (Traefik) on 127.0.0.1:80 and :443; point your Ingress hosts there (/etc/hosts or curl --resolve)');
  console.log(`stop it with: make cluster-down (logs in ${stateDir})`);
}

async function up(): Promise<number> {
  const pid = runningPid();
  if (pid) {
    console.log(`cluster already running (pid ${pid})`);
    if (existsSync(readyFile)) printUsage((JSON.parse(readFileSync(readyFile, 'utf8')) as { describe: string[] }).describe);
    return 0;
  }
  mkdirSync(stateDir, { recursive: true });
  rmSync(readyFile, { force: true });
  const fd = openSync(serveLog, 'w');
  // Detached: its own process group, no stdio tie to make, so it keeps running after this command returns.
  const child = spawn(process.execPath, [self, 'serve'], { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.unref();
  writeFileSync(pidFile, `${child.pid}\n`);
  console.log(`starting the cluster (pid ${child.pid}, state in ${stateDir}) ...`);
  const deadline = Date.now() + 180_000;
  while (!existsSync(readyFile)) {
    if (exited !== undefined || Date.now() > deadline) {
      if (exited === undefined) process.kill(-child.pid!, 'SIGKILL');
      rmSync(pidFile, { force: true });
      console.error(`the cluster did not start (${exited === undefined ? 'timeout' : `exit ${exited}`}); ${serveLog}:\n${readFileSync(serveLog, 'utf8')}`);
      return 1;
    }
    await sleep(200);
  }
  printUsage((JSON.parse(readFileSync(readyFile, 'utf8')) as { describe: string[] }).describe);
  return 0;
}

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
  writeFileSync(readyFile, JSON.stringify({ server: plane.server, describe: plane.describe() }));
  log(`ready: ${plane.server}`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    await plane.stop();
    rmSync(readyFile, { force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGHUP', () => void shutdown('SIGHUP'));
}

/** A serve that was killed could not clean up after its node: pods, mounts, iptables rules, the bridge. */
async function removeLeftovers(): Promise<void> {
  if (nodeOwner()) return; // another process (a test run) holds the node
  if (!existsSync(join(stateDir, 'node'))) return; // this checkout never ran a node
  await teardownNode([join(stateDir, 'node', 'kubelet'), join(stateDir, 'node', 'cni-ipam')]);
  await releaseNode();
}

async function down(): Promise<number> {
  const pid = runningPid();
  if (!pid) {
    rmSync(pidFile, { force: true });
    await removeLeftovers();
    console.log('cluster not running');
    return 0;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (runningPid() === pid && Date.now() < deadline) await sleep(200);
  // Still there: kill its whole process group (serve was started detached, so the group is its own).
  if (runningPid() === pid) process.kill(-pid, 'SIGKILL');
  rmSync(pidFile, { force: true });
  await removeLeftovers();
  console.log(`cluster stopped (pid ${pid}); data kept in ${stateDir}`);
  return 0;
}

const command = process.argv[2];
if (command === 'up') process.exitCode = await up();
else if (command === 'down') process.exitCode = await down();
else if (command === 'serve') await serve();
else {
  console.error('usage: node test/harness/cluster-cli.ts up|down');
  process.exitCode = 2;
}
