// `make bench` section for the box repository, each figure against a baseline measured in the same run:
//  - download throughput through the service vs a direct S3 GET of the same object (ratio service / direct);
//  - upload throughput through the service (sha256, box check, limits, atomic commit) vs a direct S3 put;
//  - peak RSS of the service process during 8 parallel downloads of a 1 GiB box;
//  - metadata requests/s (vs /health requests/s, the framework's floor);
//  - a 5 GiB upload streamed with flat memory: the service's peak RSS during it.
// The service runs in a child process so its memory is its own; bodies are generated on the fly, never whole.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, get as httpGet, request as httpRequest, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pack } from 'tar-stream';
import { type BenchEnv, type BenchRow, createBenchBucket, createBenchDatabase, removeBenchBucket } from './env.ts';
import { LAUNCHER_ENV, launcherNodeFlags } from './launcher.ts';
import { ignoreError } from '@boxyard/kit';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const region = 'us-east-1';
const serverScript = fileURLToPath(new URL('../../services/box-repository/src/testing/serve-for-bench.ts', import.meta.url));
const piece = randomBytes(MiB); // filler, reused: generating random bytes would dominate the measurement

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Plain bytes of a given size, streamed. */
function filler(bytes: number): Readable {
  let left = bytes;
  return new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const size = Math.min(left, piece.length);
      left -= size;
      this.push(size === piece.length ? piece : piece.subarray(0, size));
    },
  });
}

/** A valid box (plain tar: metadata.json, Vagrantfile, a disk image of `diskBytes`), generated as it is read. */
export function generatedBox(diskBytes: number): Readable {
  const archive = pack();
  archive.entry({ name: 'metadata.json' }, JSON.stringify({ provider: 'virtualbox' }));
  archive.entry({ name: 'Vagrantfile' }, 'Vagrant.configure("2") do |config|\nend\n');
  const disk = archive.entry({ name: 'box-disk.img', size: diskBytes }, (error) => (error ? archive.destroy(error) : archive.finalize()));
  void (async () => {
    const source = filler(diskBytes);
    for await (const chunk of source) if (!disk.write(chunk as Buffer)) await once(disk as unknown as NodeJS.EventEmitter, 'drain');
    (disk as unknown as NodeJS.WritableStream).end();
  })();
  return Readable.from(archive as AsyncIterable<Buffer>);
}

export interface Service {
  url: string;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** JSON calls to a service's API as a bench sets it up (`base` is read per call: a restart changes the port). */
export const jsonApi =
  (base: () => string) =>
  async (method: string, path: string, json?: unknown, token?: string): Promise<Record<string, unknown>> => {
    const response = await fetch(`${base()}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { 'x-access-token': token } : {}) },
      ...(json ? { body: JSON.stringify(json) } : {}),
    });
    const body = (await response.json()) as Record<string, unknown>;
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(body)}`);
    return body;
  };

/**
 * Signs in as admin on the box repository at `base` and creates `org/box` (public) with each of `versions`, each with
 * provider virtualbox, architecture amd64 and no file yet. Returns the admin's token and each version's upload URL.
 */
export async function createPublicBox(base: string, adminPassword: string, names: { org: string; box: string; versions: string[] }) {
  const api = jsonApi(() => base);
  const token = (await api('POST', '/api/auth/signin', { username: 'admin', password: adminPassword })).access_token as string;
  const boxPath = `/api/organization/${names.org}/box/${names.box}`;
  await api('POST', `/api/organization`, { name: names.org }, token);
  await api('POST', `/api/organization/${names.org}/box`, { name: names.box, isPublic: true }, token);
  for (const version of names.versions) {
    await api('POST', `${boxPath}/version`, { versionNumber: version }, token);
    await api('POST', `${boxPath}/version/${version}/provider`, { name: 'virtualbox' }, token);
    await api('POST', `${boxPath}/version/${version}/provider/virtualbox/architecture`, { name: 'amd64' }, token);
  }
  const uploadUrl = (version: string) => `${base}${boxPath}/version/${version}/provider/virtualbox/architecture/amd64/file/upload`;
  return { token, api, uploadUrl };
}

export async function startService(config: Record<string, unknown>, env: Record<string, string> = {}): Promise<Service> {
  const child = spawn(process.execPath, [...launcherNodeFlags(), serverScript], {
    env: { ...process.env, ...LAUNCHER_ENV, ...env, BOXREPO_BENCH_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`box repository exited with ${code}: ${out}`)));
  });
  return {
    url,
    pid: child.pid!,
    child,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Peak resident memory of a process while `work` runs: VmHWM after resetting it, or sampled VmRSS. */
async function peakRss(pid: number, work: () => Promise<void>): Promise<number> {
  const status = async () => readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  let resettable = true;
  await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => (resettable = false));
  let sampled = 0;
  const timer = setInterval(
    () =>
      void status()
        .then((s) => (sampled = Math.max(sampled, kb(s, 'VmRSS'))))
        .catch(ignoreError('the process may have ended between samples')),
    50,
  );
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const final = await status();
  return Math.max(sampled, kb(final, 'VmRSS'), resettable ? kb(final, 'VmHWM') : 0);
}

const rssOf = async (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export async function httpDownload(url: string, headers: Record<string, string>): Promise<number> {
  const response = await new Promise<IncomingMessage>((resolve, reject) => httpGet(url, { agent, headers }, resolve).on('error', reject));
  if (response.statusCode !== 200) throw new Error(`GET ${url}: ${response.statusCode}`);
  let bytes = 0;
  for await (const chunk of response) bytes += (chunk as Buffer).length;
  return bytes;
}

export async function httpUpload(url: string, headers: Record<string, string>, body: Readable): Promise<{ status: number; text: string }> {
  const request = httpRequest(url, { method: 'POST', agent, headers: { 'content-type': 'application/octet-stream', ...headers } });
  const responded = once(request, 'response') as Promise<[IncomingMessage]>;
  body.pipe(request);
  const [response] = await responded;
  let text = '';
  for await (const chunk of response) text += chunk;
  return { status: response.statusCode ?? 0, text };
}

export async function timed(run: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** Requests per second of GET `url` from `concurrency` keep-alive clients for `seconds`. */
export async function requestsPerSecond(url: string, seconds: number, concurrency = 16): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let count = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const response = await new Promise<IncomingMessage>((resolve, reject) => httpGet(url, { agent }, resolve).on('error', reject));
        response.resume();
        await once(response, 'end');
        if (response.statusCode !== 200) throw new Error(`GET ${url}: ${response.statusCode}`);
        count++;
      }
    }),
  );
  return count / (Number(process.hrtime.bigint() - started) / 1e9);
}

export async function benchBoxRepository(env: BenchEnv): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const { minio, bucket } = await createBenchBucket(env, 'boxes');
  const databaseUrl = await createBenchDatabase(env, `bench_boxes_${randomBytes(4).toString('hex')}`);
  const adminPassword = `Bench-${randomBytes(12).toString('base64url')}1a`;
  const serviceConfig = {
    server: { host: '127.0.0.1', port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl },
    storage: {
      driver: 's3',
      endpoint: env.minio.endpoint,
      access_key: env.minio.accessKey,
      secret_key: env.minio.secretKey,
      bucket,
      region,
      prefix: 'box-repository',
    },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: adminPassword },
    rate_limiting: { enabled: false },
    uploads: { max_bytes: 6 * GiB },
  };
  let service = await startService(serviceConfig);
  /** A fresh process (same database and bucket), so each memory figure starts from an idle service. */
  const restart = async () => {
    await service.stop();
    service = await startService(serviceConfig);
    await fetch(`${service.url}/health`);
    return rssOf(service.pid);
  };
  try {
    const api = jsonApi(() => service.url);
    const token = (await api('POST', '/api/auth/signin', { username: 'admin', password: adminPassword })).access_token as string;
    await api('POST', '/api/organization', { name: 'bench' }, token);
    const arch = async (box: string) => {
      await api('POST', '/api/organization/bench/box', { name: box, isPublic: true }, token);
      await api('POST', `/api/organization/bench/box/${box}/version`, { versionNumber: '1.0.0' }, token);
      await api('POST', `/api/organization/bench/box/${box}/version/1.0.0/provider`, { name: 'virtualbox' }, token);
      await api('POST', `/api/organization/bench/box/${box}/version/1.0.0/provider/virtualbox/architecture`, { name: 'amd64' }, token);
      return `${service.url}/api/organization/bench/box/${box}/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload?replace=true`;
    };
    const headers = { 'x-access-token': token };

    // Upload: a 1 GiB box through the service vs a direct S3 put of 1 GiB, interleaved, median of 3.
    const uploadUrl = await arch('big');
    const size = GiB;
    const serviceUp: number[] = [];
    const directUp: number[] = [];
    for (let i = 0; i < 3; i++) {
      serviceUp.push(
        size /
          MiB /
          (await timed(async () => {
            const result = await httpUpload(uploadUrl, headers, generatedBox(size));
            if (result.status >= 300) throw new Error(`upload: ${result.status} ${result.text}`);
          })),
      );
      directUp.push(size / MiB / (await timed(async () => void (await minio.putObject(bucket, `direct/upload-${i}`, filler(size), size)))));
      await minio.removeObject(bucket, `direct/upload-${i}`);
    }
    rows.push({
      name: 'upload 1 GiB box: service vs direct S3 put',
      value: round(median(serviceUp)),
      unit: 'MiB/s',
      baseline: round(median(directUp)),
      ratio: round(median(serviceUp) / median(directUp), 3),
    });

    // Download: the same object through the service vs a direct S3 GET of it, median of 3.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const storageKey = (await client.query<{ storage_key: string }>('select storage_key from box_repository.files limit 1')).rows[0]!.storage_key;
    await client.end();
    const objectName = `box-repository/${storageKey}`;
    const downloadUrl = () => `${service.url}/bench/boxes/big/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`;
    const objectSize = (await minio.statObject(bucket, objectName)).size;
    const serviceDown: number[] = [];
    const directDown: number[] = [];
    for (let i = 0; i < 3; i++) {
      serviceDown.push(
        objectSize /
          MiB /
          (await timed(async () => {
            if ((await httpDownload(downloadUrl(), {})) !== objectSize) throw new Error('short download');
          })),
      );
      directDown.push(
        objectSize /
          MiB /
          (await timed(async () => {
            let bytes = 0;
            for await (const chunk of await minio.getObject(bucket, objectName)) bytes += (chunk as Buffer).length;
            if (bytes !== objectSize) throw new Error('short direct download');
          })),
      );
    }
    rows.push({
      name: 'download 1 GiB box: service vs direct S3 GET',
      value: round(median(serviceDown)),
      unit: 'MiB/s',
      baseline: round(median(directDown)),
      ratio: round(median(serviceDown) / median(directDown), 3),
    });

    // Memory while 8 clients download the 1 GiB box at once, from an idle service.
    const idleBeforeDownloads = await restart();
    let parallelSeconds = 0;
    const parallelPeak = await peakRss(service.pid, async () => {
      parallelSeconds = await timed(async () => {
        const sizes = await Promise.all(Array.from({ length: 8 }, () => httpDownload(downloadUrl(), {})));
        if (sizes.some((s) => s !== objectSize)) throw new Error('short parallel download');
      });
    });
    rows.push({
      name: 'peak RSS of the service, 8 parallel 1 GiB downloads (vs idle RSS)',
      value: round(parallelPeak / MiB),
      unit: 'MiB',
      baseline: round(idleBeforeDownloads / MiB),
      ratio: round(parallelPeak / idleBeforeDownloads, 3),
    });
    rows.push({ name: '8 parallel 1 GiB downloads, aggregate throughput', value: round((8 * objectSize) / MiB / parallelSeconds), unit: 'MiB/s' });

    // Metadata requests per second, against /health as the framework's floor.
    const metadataRps = await requestsPerSecond(`${service.url}/bench/big`, 5);
    const healthRps = await requestsPerSecond(`${service.url}/health`, 5);
    rows.push({
      name: 'metadata requests/s (16 clients) vs GET /health',
      value: round(metadataRps),
      unit: 'req/s',
      baseline: round(healthRps),
      ratio: round(metadataRps / healthRps, 3),
    });

    // A 5 GiB upload streamed through: the service's memory stays flat.
    const idle = await restart();
    const hugeUrl = await arch('huge');
    let hugeSeconds = 0;
    const hugePeak = await peakRss(service.pid, async () => {
      hugeSeconds = await timed(async () => {
        const result = await httpUpload(hugeUrl, headers, generatedBox(5 * GiB));
        if (result.status >= 300) throw new Error(`5 GiB upload: ${result.status} ${result.text}`);
      });
    });
    rows.push({
      name: 'peak RSS of the service, one 5 GiB upload (vs idle RSS)',
      value: round(hugePeak / MiB),
      unit: 'MiB',
      baseline: round(idle / MiB),
      ratio: round(hugePeak / idle, 3),
    });
    rows.push({ name: '5 GiB upload throughput', value: round((5 * GiB) / MiB / hugeSeconds), unit: 'MiB/s' });
  } finally {
    agent.destroy();
    await service.stop();
    await removeBenchBucket(minio, bucket);
  }
  return rows;
}
