// Every service rolled twice under its users' traffic: two replicas each, then `helm upgrade` to another image tag
// and `kubectl rollout restart` of each Deployment while the loops of rolling-traffic.ts run. What the
// real-cluster suite asserts (no failure, the same bytes, no event lost, the same shell) and `make bench`
// (section upgrade) reports.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeBox } from '@boxyard/box-repository/testing/boxes.ts';
import { api, login, openTerminal, type TerminalClient } from '@boxyard/terminal/testing/test-gateway.ts';
import { NODE } from '../harness/node/network.ts';
import { HOSTS, NS, SYSTEM_NS, repoRoot, type BoxyardCluster } from './boxyard-cluster.ts';
import { until } from './fixture.ts';
import { fileSha256, followEvents, requestLoop, slowDownload, typingTerminal, type TrafficReport } from './rolling-traffic.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);
const DEPLOYMENTS = ['boxes-box-repository', 'files-file-share', 'shells-terminal'];
const BOX_BYTES = 512 * 1024 ** 2;
/** Slow enough that the download spans the roll (about 90 s), as a user's on a modest link would. */
const DOWNLOAD_RATE = 6_000_000;

export interface RollResult {
  rollMs: number;
  reports: TrafficReport[];
  download: { code: number; sha256: string; bytes: number; stderr: string; expectedSha256: string };
  events: { ids: number[]; connections: number; missing: string[] };
  shell: { reattached: number; pidBefore: string; client: TerminalClient; stop(): Promise<void> };
}

/** Two replicas of each service, the rate limit off (the loops are one client asking far more than a person). */
async function twoReplicasEach(cluster: BoxyardCluster): Promise<void> {
  for (const resource of ['boxrepository/boxes', 'fileshare/files', 'terminalpool/shells']) {
    await cluster.kubectl(['patch', resource, '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":2,"rateLimiting":{"enabled":false}}}']);
  }
  for (const deployment of DEPLOYMENTS) await cluster.kubectl(['rollout', 'status', '-n', NS, `deployment/${deployment}`, '--timeout=300s']);
  await cluster.waitReady(['boxrepository/boxes', 'fileshare/files', 'terminalpool/shells']);
  for (const host of Object.values(HOSTS)) {
    await until(
      `https://${host}/health/ready to answer 200`,
      async () => ((await fetch(`https://${host}/health/ready`)).status === 200 ? true : undefined),
      30_000,
    );
  }
}

/** A public 512 MiB box (acme must exist); its download URL from the Vagrant metadata, and its sha256. */
async function publishBigBox(cluster: BoxyardCluster, org: string): Promise<{ url: string; sha256: string }> {
  const boxes = `https://${HOSTS.boxes}`;
  const password = await cluster.secretValue('boxes-box-repository-admin', 'password');
  const signin = await fetch(`${boxes}/api/auth/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  const authorization = `Bearer ${((await signin.json()) as { access_token: string }).access_token}`;
  const root = `${boxes}/api/organization/${org}/box`;
  const post = async (url: string, body: unknown) => {
    const response = await fetch(url, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`);
  };
  await post(root, { name: 'big-box', isPublic: true });
  await post(`${root}/big-box/version`, { versionNumber: '1.0.0' });
  await post(`${root}/big-box/version/1.0.0/provider`, { name: 'virtualbox' });
  await post(`${root}/big-box/version/1.0.0/provider/virtualbox/architecture`, { name: 'amd64' });
  const file = join(cluster.dir, 'big.box');
  await writeFile(file, await makeBox({ gzip: false, fillerBytes: BOX_BYTES }));
  const { stdout } = await run('curl', [
    '-sS',
    '--cacert',
    cluster.caFile,
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '-H',
    `authorization: ${authorization}`,
    '-H',
    'content-type: application/octet-stream',
    '-H',
    'x-file-name: vagrant.box',
    '--data-binary',
    `@${file}`,
    `${root}/big-box/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload`,
  ]);
  if (Number(stdout) >= 300) throw new Error(`upload of the big box: ${stdout}`);
  const metadata = (await (await fetch(`${boxes}/${org}/big-box`, { headers: { accept: 'application/json' } })).json()) as {
    versions: { providers: { url: string }[] }[];
  };
  return { url: metadata.versions[0]!.providers[0]!.url, sha256: await fileSha256(file) };
}

/** helm upgrade to `<image>-next`, every Deployment on it; then kubectl rollout restart of each. */
async function rollTwice(cluster: BoxyardCluster): Promise<void> {
  const next = `${cluster.image.image}-next`;
  await run('ctr', ['--address', `${NODE.runDir}/containerd.sock`, '--namespace', 'k8s.io', 'images', 'tag', '--force', cluster.image.image, next]);
  await cluster.helm([
    'upgrade',
    'boxyard',
    join(repoRoot, 'charts', 'boxyard'),
    '-n',
    SYSTEM_NS,
    '--reuse-values',
    '--set',
    `image.tag=${next.slice(next.lastIndexOf(':') + 1)}`,
    '--wait',
    '--timeout=5m',
  ]);
  for (const deployment of DEPLOYMENTS) {
    await until(`${deployment} on ${next}`, async () => {
      const d = await cluster.json<{ spec: { template: { spec: { containers: { image: string }[] } } } }>(['get', 'deployment', '-n', NS, deployment]);
      return d.spec.template.spec.containers[0]!.image === next ? true : undefined;
    });
    await cluster.kubectl(['rollout', 'status', '-n', NS, `deployment/${deployment}`, '--timeout=300s']);
  }
  for (const deployment of DEPLOYMENTS) {
    await cluster.kubectl(['rollout', 'restart', '-n', NS, `deployment/${deployment}`]);
    await cluster.kubectl(['rollout', 'status', '-n', NS, `deployment/${deployment}`, '--timeout=300s']);
  }
}

/** Starts a shell, notes its PID and a marker in its scrollback, then keeps it typing. */
async function startTyping(cluster: BoxyardCluster) {
  const shells = `https://${HOSTS.shells}`;
  const cookie = await login(shells, 'admin', await cluster.secretValue('shells-terminal-admin', 'password'));
  const started = await api(shells, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'e2e-roll' }, origin: shells });
  if (started.status !== 200) throw new Error(`terminal start: ${started.status} ${JSON.stringify(started.json)}`);
  const { websocket_path: path, session } = started.json.data as { websocket_path: string; session: { id: string } };
  const first = await openTerminal(shells, path, { cookie, origin: shells });
  first.type('echo "pid=$$" before-roll-\'\'marker\r');
  const pidBefore = /pid=(\d+) before-roll-marker/.exec(await first.waitFor(/pid=\d+ before-roll-marker/, 30_000))![1]!;
  await first.close();
  const typing = typingTerminal(shells, path, { cookie, origin: shells });
  const stopSession = async () => void (await api(shells, 'DELETE', `/api/terminal/sessions/${session.id}/stop`, { cookie, origin: shells }));
  return { typing, pidBefore, stopSession };
}

export async function rollUnderTraffic(cluster: BoxyardCluster, org: string): Promise<RollResult> {
  await twoReplicasEach(cluster);
  const big = await publishBigBox(cluster, org);
  const download = slowDownload(big.url, cluster.caFile, DOWNLOAD_RATE);

  const boxes = `https://${HOSTS.boxes}`;
  const files = `https://${HOSTS.files}`;
  const filesAuth = `Basic ${Buffer.from(`admin:${await cluster.secretValue('files-file-share-admin', 'password')}`).toString('base64')}`;
  const events = followEvents(`${files}/events`, filesAuth);
  await events.opened;
  const uploaded: string[] = [];
  const loops = [
    requestLoop('vagrant metadata', () => fetch(`${boxes}/${org}/big-box`, { headers: { accept: 'application/json' } })),
    requestLoop('file-share listings', () => fetch(`${files}/`, { headers: { authorization: filesAuth, accept: 'application/json' } })),
    requestLoop(
      'file-share uploads',
      async (i) => {
        const form = new FormData();
        form.append('file', new Blob([`upload ${i}\n`]), `${i}.txt`);
        const response = await fetch(`${files}/rolling/${i}.txt`, { method: 'POST', headers: { authorization: filesAuth }, body: form });
        if (response.ok) uploaded.push(`/rolling/${i}.txt`);
        return response;
      },
      200,
    ),
  ];
  const shell = await startTyping(cluster);

  const began = Date.now();
  await rollTwice(cluster);
  const rollMs = Date.now() - began;

  const downloaded = await download;
  const reports = await Promise.all(loops.map((loop) => loop.stop()));
  const typed = await shell.typing.stop();
  reports.push(typed.report);
  // The last uploads' events have had time to arrive.
  await until("every upload's event", async () => (uploaded.every((p) => events.paths.includes(p)) ? true : undefined), 30_000).catch(
    ignoreError('the report counts the events that did not arrive'),
  );
  events.close();
  return {
    rollMs,
    reports,
    download: { ...downloaded, expectedSha256: big.sha256 },
    events: { ids: events.ids, connections: events.connections(), missing: uploaded.filter((p) => !events.paths.includes(p)) },
    shell: { reattached: typed.reattached, pidBefore: shell.pidBefore, client: shell.typing.client(), stop: shell.stopSession },
  };
}

export function describeRoll(result: RollResult): string {
  const lines = result.reports.map(
    (r) => `  ${r.name}: ${r.served} served, ${r.failed} failed, longest stall ${r.longestStallMs} ms${r.failures.length ? ` (${r.failures.join('; ')})` : ''}`,
  );
  return [
    `helm upgrade + rollout restart of every service, 2 replicas each, in ${Math.round(result.rollMs / 1000)} s:`,
    ...lines,
    `  512 MiB download begun before the roll: ${result.download.bytes} bytes, curl exit ${result.download.code}, sha256 ${result.download.sha256 === result.download.expectedSha256 ? 'matches' : 'DIFFERS'}`,
    `  SSE: ${result.events.ids.length} events over ${result.events.connections} connections, ${result.events.missing.length} missing`,
    `  terminal: reattached ${result.shell.reattached} times`,
  ].join('\n');
}
