// `make bench` section `resumable`: 1 GiB through the file share's tus endpoint in 16 MiB PATCHes vs the plain
// upload route (the bytes as one request body), same service, same run, interleaved; s3 driver on the bench's
// MinIO; the share in its own process as the launchers run it (share-process.ts). Both sides use curl, so the ratio measures the service's two paths, not two clients: the plain route one
// request, tus a creation POST then 64 PATCHes of a 16 MiB piece from one curl process over one kept-alive
// connection (`--next`), as tus clients send them; goal ≥ 0.85×. Two rows without a goal: the same PATCHes from a
// shell loop, a curl process and a connection per PATCH (~10 ms of process start each, on the client's side), and
// tus-js-client in its own process (a JavaScript client costs more CPU per byte than curl). And the share's CPU per
// GiB on each path: on a busy machine the ratio falls (each PATCH waits for its answer, every such wait costs a
// wake-up of the client and the share) while the CPU per byte stays that of the plain route.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { b64, startTusClient, tusCreate } from '@boxyard/file-share/testing/tus-clients.ts';
import { type BenchEnv, type BenchRow, createBenchBucket, createBenchDatabase, removeBenchBucket } from './env.ts';
import { s3FileShareConfig } from './file-share.ts';
import { cpuOf } from './scale-procs.ts';
import { startShareProcess } from './share-process.ts';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
// BENCH_RESUMABLE_MIB: a smaller file to check the section runs (the figures are for 1 GiB).
const fileBytes = Number(process.env.BENCH_RESUMABLE_MIB ?? 1024) * MiB;
const patchBytes = 16 * MiB;
const runs = 5; // interleaved rounds, medians: single 1 GiB transfers vary by ±20 % on this machine
const goal = 0.85;
const region = 'us-east-1';
const adminPassword = `Bench-${randomBytes(6).toString('hex')}-1A`;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

async function seconds(step: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await step();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function writeRandomFile(path: string): Promise<void> {
  const file = await open(path, 'w');
  for (let written = 0; written < fileBytes; written += 16 * MiB) await file.write(randomBytes(Math.min(16 * MiB, fileBytes - written)));
  await file.close();
}

/** The file cut into PATCH-sized pieces (outside the timing), so that curl can send each one as a body. */
async function pieces(file: string, dir: string): Promise<string[]> {
  // Read a piece at a time: the bench process also runs the share, and a 1 GiB buffer would stay in its heap.
  const source = await open(file, 'r');
  const paths: string[] = [];
  try {
    for (let offset = 0; offset < fileBytes; offset += patchBytes) {
      const piece = Buffer.alloc(Math.min(patchBytes, fileBytes - offset));
      await source.read(piece, 0, piece.length, offset);
      const path = join(dir, `piece-${offset / patchBytes}`);
      await writeFile(path, piece);
      paths.push(path);
    }
  } finally {
    await source.close();
  }
  return paths;
}

// The tus client as a user's shell script runs it: one creation, then one curl PATCH per piece. It runs in its own
// shell, not spawned curl by curl from this process: the share under test runs in this process, and each spawn
// (a fork of a process this size) stalls its event loop, a cost of the bench, not of the service.
const CURL_TUS = `set -eu
location=$(curl -sS -i -X POST -u "$USERPASS" -H 'Tus-Resumable: 1.0.0' -H "Upload-Length: $LENGTH" -H "Upload-Metadata: path $METADATA" "$BASE/api/uploads" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
[ -n "$location" ] || { echo "tus creation failed" >&2; exit 1; }
offset=0
for piece in "$@"; do
  code=$(curl -sS -X PATCH -u "$USERPASS" -H 'Tus-Resumable: 1.0.0' -H 'Content-Type: application/offset+octet-stream' -H "Upload-Offset: $offset" -T "$piece" -o /dev/null -w '%{http_code}' "$BASE$location")
  [ "$code" = 204 ] || { echo "PATCH at $offset answered $code" >&2; exit 1; }
  offset=$((offset + $(stat -c %s "$piece")))
done
`;

/** tus with one curl process: the creation, then every PATCH over one kept-alive connection. */
async function curlTus(base: string, user: string, parts: string[], path: string): Promise<void> {
  const created = await tusCreate(`${base}/api/uploads`, fileBytes, `path ${b64(path)}`, { user });
  if (created.status !== 201 || !created.headers.location) throw new Error(`tus creation answered ${created.status}`);
  const patches = parts.flatMap((piece, i) => [
    ...(i > 0 ? ['--next'] : []),
    ...['-sS', '-X', 'PATCH', '-u', user, '-H', 'Tus-Resumable: 1.0.0', '-H', 'Content-Type: application/offset+octet-stream'],
    ...['-H', `Upload-Offset: ${i * patchBytes}`, '-T', piece, '-o', '/dev/null', '-w', '%{http_code}\n', `${base}${created.headers.location}`],
  ]);
  const { stdout } = await run('curl', patches);
  const codes = stdout.trim().split('\n');
  if (codes.length !== parts.length || codes.some((code) => code !== '204')) throw new Error(`PATCHes answered ${codes.join(' ')}`);
}

/** tus from a shell loop: the creation, then a curl process per PATCH. */
async function curlTusLoop(base: string, user: string, parts: string[], path: string): Promise<void> {
  await run('sh', ['-c', CURL_TUS, 'curl-tus', ...parts], {
    env: { ...process.env, BASE: base, USERPASS: user, LENGTH: String(fileBytes), METADATA: Buffer.from(path).toString('base64') },
  });
}

/** tus-js-client in its own process until it reports `done`. */
async function tusUpload(endpoint: string, file: string, authorization: string, path: string): Promise<void> {
  const client = startTusClient('js', { endpoint, file, authorization, path, chunkBytes: patchBytes });
  const code = await client.exit;
  if (code !== 0 || !client.lines.includes('done')) throw new Error(`tus client exited with ${code}`);
}

export async function benchResumable(env: BenchEnv): Promise<BenchRow[]> {
  const { minio: client, bucket } = await createBenchBucket(env, 'tus');
  const databaseUrl = await createBenchDatabase(env, `bench_tus_${randomBytes(4).toString('hex')}`);
  const dir = join(env.workDir, 'resumable');
  await mkdir(dir, { recursive: true });
  const share = await startShareProcess(dir, s3FileShareConfig(env, { databaseUrl, bucket, region, adminPassword, maxBytes: 2 * fileBytes }));
  try {
    const authorization = `Basic ${Buffer.from(`admin:${adminPassword}`).toString('base64')}`;
    const file = join(dir, 'object.bin');
    await writeRandomFile(file);
    const plain = async (i: number) => {
      const { stdout } = await run('curl', [
        '-sS',
        '-X',
        'POST',
        '-u',
        `admin:${adminPassword}`,
        '-H',
        'Content-Type: application/octet-stream',
        '-T',
        file,
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `${share.url}/bench/plain-${i}.bin`,
      ]);
      if (stdout !== '201') throw new Error(`plain upload answered ${stdout}`);
    };
    const parts = await pieces(file, dir);
    const steps = {
      plain,
      tus: (i: number) => curlTus(share.url, `admin:${adminPassword}`, parts, `/bench/tus-${i}.bin`),
      loop: (i: number) => curlTusLoop(share.url, `admin:${adminPassword}`, parts, `/bench/loop-${i}.bin`),
      js: (i: number) => tusUpload(`${share.url}/api/uploads`, file, authorization, `/bench/js-${i}.bin`),
    };
    const rates: Record<keyof typeof steps, number[]> = { plain: [], tus: [], loop: [], js: [] };
    // CPU of the share's process per GiB received.
    const cpu: Record<keyof typeof steps, number[]> = { plain: [], tus: [], loop: [], js: [] };
    // Each file is removed after its step (outside the timing), its bytes with it: 20 GiB would pile up in MinIO.
    const remove = async (path: string) => {
      const answer = await fetch(`${share.url}${path}`, { method: 'DELETE', headers: { authorization } });
      if (!answer.ok) throw new Error(`DELETE ${path} answered ${answer.status}`);
    };
    for (let i = 0; i < runs; i++) {
      const kinds = Object.keys(steps) as (keyof typeof steps)[];
      for (const kind of i % 2 === 0 ? kinds : kinds.reverse()) {
        execFileSync('sync');
        const before = cpuOf(share.pid);
        rates[kind].push(fileBytes / MiB / (await seconds(() => steps[kind](i))));
        cpu[kind].push((cpuOf(share.pid) - before) / (fileBytes / GiB));
        await remove(`/bench/${kind}-${i}.bin`);
      }
    }
    const baseline = median(rates.plain);
    const row = (name: string, value: number, withGoal: boolean): BenchRow => ({
      name,
      value: round(value),
      unit: 'MiB/s',
      baseline: round(baseline),
      ratio: round(value / baseline, 3),
      ...(withGoal ? { goal: `≥ ${goal.toFixed(2)}×`, pass: value / baseline >= goal } : {}),
    });
    return [
      row(`upload ${fileBytes / MiB / 1024} GiB: tus in 16 MiB PATCHes vs the plain route (both curl), s3 driver`, median(rates.tus), true),
      row(`upload ${fileBytes / MiB / 1024} GiB: tus from a shell loop, a curl process per PATCH (vs the plain route)`, median(rates.loop), false),
      row(`upload ${fileBytes / MiB / 1024} GiB: tus-js-client, 16 MiB chunks (vs the plain route with curl)`, median(rates.js), false),
      {
        name: 'CPU of the file share per GiB received: tus in 16 MiB PATCHes over one connection (vs the plain route)',
        value: round(median(cpu.tus), 2),
        unit: 'CPU-s/GiB',
        baseline: round(median(cpu.plain), 2),
        ratio: round(median(cpu.tus) / median(cpu.plain), 3),
      },
    ];
  } finally {
    await share.stop();
    await removeBenchBucket(client, bucket);
  }
}
