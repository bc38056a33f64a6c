// `make bench ONLY=scale-cpu` (issue 35, part 2, item 7): the two rows a shared 2-core machine cannot judge as
// wall-clock ratios, as CPU-seconds per GiB relayed instead, read from /proc/<pid>/stat (utime + stime) of every
// product process involved before and after, so what else the machine runs does not enter the figure:
// - terminal output flood: gateway + the session's agent per GiB printed by the shell and received over the
//   WebSocket, against the raw pty reader's (this process reading the same output from a pty with node-pty:
//   process.cpuUsage() around it, nothing else runs in it meanwhile); goal ≤ 1.5× the raw reader's;
// - box download relayed through the s3 driver: the box repository process per GiB it streams from S3 to a curl
//   client, against the client of a direct S3 GET of the same object (curl on a presigned URL; its CPU is the
//   cutime + cstime of the shell that waited for it); goal ≤ 0.6 CPU-s per GiB.
// Processes not counted (the same for both sides): the shell, head and tr printing the flood; MinIO serving the
// object; the bench's WebSocket client.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as NodePty from 'node-pty';
import { startWithBigBox } from './downloads.ts';
import { type BenchEnv, type BenchRow, createBenchBucket, removeBenchBucket } from './env.ts';
import { round } from './load.ts';
import { childrenCpuOf, cpuOf, cpuOfAll } from './scale-procs.ts';
import { agentPids, login, median, openSocket, socketEcho, startGateway, startSession, stopSession, timeUntil, waitQuiet } from './terminal.ts';

const TERMINAL_SRC = fileURLToPath(new URL('../../services/terminal/src/', import.meta.url));
const pty = createRequire(join(TERMINAL_SRC, 'service.ts'))('node-pty') as typeof NodePty;
const GiB = 1024 ** 3;
const FLOOD_BYTES = Number(process.env.BOXYARD_BENCH_FLOOD_MIB ?? 256) * 1024 ** 2;
const BOX_BYTES = 512 * 1024 ** 2;
const ROUNDS = 3;
const region = 'us-east-1';
const boxPath = '/bench/boxes/big/versions/1.0.0/providers/virtualbox/amd64/vagrant.box';

const floodCommand = (run: number, quote: string) => `head -c ${FLOOD_BYTES} /dev/zero | tr '\\0' x; echo FLOOD-${quote}END-${run}`;

/** One flood over the gateway: CPU-seconds of the gateway and of the session's agent. */
async function gatewayFlood(base: string, cookie: string, gatewayPid: number, run: number): Promise<{ gateway: number; agent: number }> {
  const session = await startSession(base, cookie, `bench-cpu-flood-${run}`);
  const socket = await openSocket(base, session.path, cookie);
  const echo = socketEcho(socket);
  await waitQuiet(echo);
  const [agent] = agentPids(new Set([session.id]));
  if (!agent) throw new Error('flood: the session has no agent process');
  const before = { gateway: cpuOf(gatewayPid), agent: cpuOf(agent) };
  // The quotes keep the typed command's echo from containing the marker.
  const { bytes } = await timeUntil(echo, `FLOOD-END-${run}`, () => echo.send(Buffer.from(`${floodCommand(run, '""')}\r`)));
  const after = { gateway: cpuOf(gatewayPid), agent: cpuOf(agent) };
  if (bytes < FLOOD_BYTES) throw new Error(`flood: received ${bytes} bytes`);
  socket.close();
  await stopSession(base, cookie, session.id);
  return { gateway: after.gateway - before.gateway, agent: after.agent - before.agent };
}

/** The same output read from a pty in this process: its CPU-seconds (user + system). */
async function rawFlood(run: number): Promise<number> {
  const marker = `FLOOD-END-${run}`;
  const before = process.cpuUsage();
  const term = pty.spawn('/bin/sh', ['-c', floodCommand(run, '')], {
    name: 'xterm-256color',
    cols: 120,
    rows: 40,
    env: { PATH: '/usr/bin:/bin', TERM: 'xterm-256color' },
    encoding: null,
  });
  const bytes = await new Promise<number>((resolve) => {
    let count = 0;
    let tail = '';
    term.onData((chunk) => {
      const data = chunk as unknown as Buffer;
      count += data.length;
      tail = (tail + data.subarray(Math.max(0, data.length - 512)).toString('latin1')).slice(-1024);
      if (tail.includes(marker)) resolve(count);
    });
  });
  const used = process.cpuUsage(before);
  term.kill();
  if (bytes < FLOOD_BYTES) throw new Error(`raw flood: read ${bytes} bytes`);
  return (used.user + used.system) / 1e6;
}

async function benchFlood(env: BenchEnv): Promise<BenchRow[]> {
  const adminPassword = `Bench-${randomBytes(9).toString('base64url')}1`;
  const { child, base } = await startGateway(env, adminPassword);
  try {
    const cookie = await login(base, adminPassword);
    const viaGateway: { gateway: number; agent: number }[] = [];
    const raw: number[] = [];
    await rawFlood(-1); // warm both paths once
    await gatewayFlood(base, cookie, child.pid!, -1);
    for (let run = 0; run < ROUNDS; run++) {
      viaGateway.push(await gatewayFlood(base, cookie, child.pid!, run));
      raw.push(await rawFlood(run));
    }
    const perGiB = (seconds: number) => seconds / (FLOOD_BYTES / GiB);
    const product = perGiB(median(viaGateway.map((f) => f.gateway + f.agent)));
    const reader = perGiB(median(raw));
    const mib = FLOOD_BYTES / 1024 ** 2;
    return [
      {
        name: `terminal output flood (${mib} MiB × ${ROUNDS}): CPU of gateway + agent per GiB (vs the raw pty reader's)`,
        value: round(product, 2),
        unit: 'CPU-s/GiB',
        baseline: round(reader, 2),
        ratio: round(product / reader, 2),
        goal: '≤ 1.50×',
        pass: product / reader <= 1.5,
      },
      { name: 'terminal output flood: gateway CPU per GiB', value: round(perGiB(median(viaGateway.map((f) => f.gateway))), 2), unit: 'CPU-s/GiB' },
      { name: 'terminal output flood: agent CPU per GiB', value: round(perGiB(median(viaGateway.map((f) => f.agent))), 2), unit: 'CPU-s/GiB' },
    ];
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

/** curl downloading `url` to /dev/null, run by a shell that then prints its own stat (cutime/cstime: curl's CPU). */
async function curlWithCpu(url: string, bytes: number): Promise<number> {
  const script = 'curl -sS --fail -L --max-redirs 2 -o /dev/null -w "%{size_download}\\n" "$1" || exit 1; read -r stat < /proc/$$/stat; echo "$stat"';
  const child = spawn('/bin/sh', ['-c', script, 'sh', url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const [size, stat] = out.trim().split('\n');
  if (code !== 0 || Number(size) !== bytes || !stat) throw new Error(`GET ${url}: exit ${code}, ${size} bytes, expected ${bytes}`);
  return childrenCpuOf(stat);
}

async function benchRelay(env: BenchEnv): Promise<BenchRow[]> {
  const { minio, bucket } = await createBenchBucket(env, 'cpu');
  const storage = {
    driver: 's3',
    endpoint: env.minio.endpoint,
    access_key: env.minio.accessKey,
    secret_key: env.minio.secretKey,
    bucket,
    region,
    prefix: 'box-repository',
  };
  const { service, size } = await startWithBigBox(env, storage, BOX_BYTES);
  try {
    let objectName = '';
    for await (const item of minio.listObjectsV2(bucket, 'box-repository/', true)) objectName ||= (item as { name: string }).name;
    const presigned = await minio.presignedGetObject(bucket, objectName, 3600);
    const relayed: { service: number; client: number }[] = [];
    const direct: number[] = [];
    await curlWithCpu(`${service.url}${boxPath}`, size); // warm
    for (let run = 0; run < ROUNDS; run++) {
      const before = cpuOfAll([service.pid]);
      const client = await curlWithCpu(`${service.url}${boxPath}`, size);
      relayed.push({ service: cpuOfAll([service.pid]) - before, client });
      direct.push(await curlWithCpu(presigned, size));
    }
    const perGiB = (seconds: number) => seconds / (size / GiB);
    const product = perGiB(median(relayed.map((r) => r.service)));
    const client = perGiB(median(direct));
    return [
      {
        name: `box download through the s3 driver (512 MiB × ${ROUNDS}): CPU of the box repository per GiB (vs the direct S3 GET client's)`,
        value: round(product, 2),
        unit: 'CPU-s/GiB',
        baseline: round(client, 2),
        ratio: round(product / client, 2),
        goal: '≤ 0.60 CPU-s/GiB',
        pass: product <= 0.6,
      },
      {
        name: 'box download through the s3 driver: the curl client CPU per GiB (same client as the baseline)',
        value: round(perGiB(median(relayed.map((r) => r.client))), 2),
        unit: 'CPU-s/GiB',
      },
    ];
  } finally {
    await service.stop();
    await removeBenchBucket(minio, bucket);
  }
}

export async function benchScaleCpu(env: BenchEnv): Promise<BenchRow[]> {
  // BOXYARD_BENCH_CPU_ROWS=flood (or relay): only those rows, for a quicker run while working on one of them.
  const only = process.env.BOXYARD_BENCH_CPU_ROWS;
  const rows = [...(only === 'relay' ? [] : await benchFlood(env)), ...(only === 'flood' ? [] : await benchRelay(env))];
  for (const row of rows) console.error(`  [bench] ${row.name}: ${row.value} ${row.unit} vs ${row.baseline ?? '-'}`);
  return rows;
}
