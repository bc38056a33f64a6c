// The real node (root only): how long a platform team waits from `kubectl apply` to Ready per kind, and how long
// a user waits for a shell: POST /api/terminal/start → first prompt over the WebSocket, 20 sessions, with the pod
// backend (a session pod per shell, through the Ingress) against the local backend (a process per shell) on the
// same machine in the same run.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import WebSocket from 'ws';
import { plain } from '@boxyard/terminal/testing/test-gateway.ts';
import { NS, repoRoot, startBoxyardCluster } from '../cluster/boxyard-cluster.ts';
import type { BenchEnv, BenchRow } from './env.ts';
import { login, percentile, row, startGateway, startSession, stopSession } from './terminal.ts';

const SESSIONS = 20;

const KINDS = [
  { file: 'box-repository.yaml', resource: 'boxrepository/boxes', kind: 'BoxRepository' },
  { file: 'file-share.yaml', resource: 'fileshare/files', kind: 'FileShare' },
  { file: 'terminal-pool.yaml', resource: 'terminalpool/shells', kind: 'TerminalPool' },
];

/**
 * Opens the session's socket and resolves with the time until its output first shows a shell prompt (`$` or `#`).
 * The listener is in place before the upgrade completes: the scrollback replay can arrive with the upgrade response.
 */
function firstPrompt(base: string, path: string, cookie: string, since: number): Promise<{ ms: number; socket: WebSocket }> {
  const socket = new WebSocket(`${base.replace('http', 'ws')}${path}`, { headers: { cookie }, perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no prompt within 60 s; got ${JSON.stringify(seen.slice(-200))}`)), 60_000);
    socket.once('error', reject);
    socket.on('message', (data, isBinary) => {
      if (!isBinary) return;
      seen += data.toString();
      if (/[$#] ?$/.test(plain(seen).trimEnd())) {
        clearTimeout(timer);
        resolve({ ms: Date.now() - since, socket });
      }
    });
  });
}

/** Start → first prompt, `count` times, one after the other; each session is stopped before the next. */
async function sessionStarts(base: string, cookie: string, label: string, count = SESSIONS): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const since = Date.now();
    const session = await startSession(base, cookie, `${label}-${i}-${randomBytes(3).toString('hex')}`);
    const { ms, socket } = await firstPrompt(base, session.path, cookie, since);
    times.push(ms);
    socket.close();
    await stopSession(base, cookie, session.id);
  }
  return times;
}

export async function benchCluster(env: BenchEnv): Promise<BenchRow[]> {
  if (process.getuid?.() !== 0) {
    console.log('cluster: skipped (the real node needs root)');
    return [];
  }
  const cluster = await startBoxyardCluster((line) => console.log(`[cluster] ${line}`));
  const rows: BenchRow[] = [];
  try {
    rows.push(row('control plane + real node Ready (make cluster)', 's', cluster.timings.cluster / 1000));
    rows.push(row('helm install --wait (2 operator replicas)', 's', cluster.timings.helm / 1000));
    for (const { file, resource, kind } of KINDS) {
      const started = Date.now();
      await cluster.kubectl(['apply', '-n', NS, '-f', join(repoRoot, 'crds', 'examples', file)]);
      await cluster.waitReady([resource]);
      rows.push(row(`kubectl apply → Ready: ${kind} (crds/examples)`, 's', (Date.now() - started) / 1000));
    }

    // The pod backend through the Ingress (TLS, Traefik, gateway pod, session pod), and the local backend on
    // loopback (gateway process, agent process): the same API, the same measure.
    const podBase = 'https://shells.example.com';
    const podCookie = await login(podBase, await cluster.secretValue('shells-terminal-admin', 'password'));
    await sessionStarts(podBase, podCookie, 'warm', 2); // the first pod unpacks the image: not what users see
    const pod = await sessionStarts(podBase, podCookie, 'pod');

    const adminPassword = `Bench-${randomBytes(9).toString('base64url')}1`;
    const local = await startGateway(env, adminPassword);
    try {
      const localCookie = await login(local.base, adminPassword);
      await sessionStarts(local.base, localCookie, 'warm', 2);
      const times = await sessionStarts(local.base, localCookie, 'local');
      rows.push(row(`terminal start → prompt p50, ${SESSIONS}×: pod (vs local backend)`, 'ms', percentile(pod, 50), percentile(times, 50)));
      rows.push(row(`terminal start → prompt p99, ${SESSIONS}×: pod (vs local backend)`, 'ms', percentile(pod, 99), percentile(times, 99)));
    } finally {
      local.child.kill('SIGTERM');
      await new Promise((r) => local.child.once('exit', r));
    }
    return rows;
  } finally {
    await cluster.stop();
  }
}
