// `make demo` / `make demo-down`: the whole product in a cluster on this machine (demo.ts), kept running after
// make returns. `up` re-spawns this file as a detached `serve` and prints the URLs, the admin passwords and the
// lines to try once everything answers; `down` stops it, which removes the cluster, its node's traces on the host,
// the /etc/hosts lines, PostgreSQL and MinIO and their data. Needs root (a real node) and `make image`.
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand, runningPid, stopDetached, stopOnSignals, upDetached, type DetachedFiles } from '../harness/detached.ts';
import { demoInstructions, startDemo } from './demo.ts';

const self = fileURLToPath(import.meta.url);
const home = process.env.BOXYARD_HOME ? resolve(process.env.BOXYARD_HOME) : join(dirname(self), '..', '..', '.boxyard');
const stateDir = join(home, 'demo');
const files: DetachedFiles = {
  script: self,
  stateDir,
  pidFile: join(home, 'demo.pid'),
  readyFile: join(stateDir, 'ready.json'),
  serveLog: join(stateDir, 'serve.log'),
};

type Ready = Parameters<typeof demoInstructions>[0] & { readyMs: number };

async function up(): Promise<number> {
  if (process.getuid?.() !== 0 && !runningPid(files)) {
    console.error('make demo runs a real Kubernetes node (kubelet, containerd, iptables): run it as root');
    return 1;
  }
  return upDetached<Ready>(files, 'the demo', 900_000, (ready, startedNow) => {
    if (startedNow) console.log(`ready in ${Math.round(ready.readyMs / 1000)} s\n`);
    console.log(demoInstructions(ready));
  });
}

async function serve(): Promise<void> {
  const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);
  const demo = await startDemo(log);
  const ready: Ready = {
    urls: demo.urls,
    admins: demo.admins,
    box: demo.box,
    caFile: demo.cluster.caFile,
    kubeconfig: demo.cluster.plane.kubeconfig,
    readyMs: demo.readyMs,
  };
  writeFileSync(files.readyFile, JSON.stringify(ready), { mode: 0o600 }); // it holds the admin passwords
  log('ready');
  stopOnSignals(log, async () => {
    // BOXYARD_KEEP_CLUSTER_LOGS keeps the cluster's directory, as in the real-cluster suite.
    await demo.cluster.stop();
    rmSync(files.readyFile, { force: true });
  });
}

async function down(): Promise<number> {
  const pid = await stopDetached(files, 120_000);
  console.log(pid ? `demo stopped (pid ${pid}); everything it made is removed` : 'the demo is not running');
  return 0;
}

await runCommand('test/cluster/demo-cli.ts', { up, down, serve });
