// `make bench` section for the file share (s3 driver on the bench's MinIO, its own database):
// - listing a 10,000-entry folder, JSON and HTML (one page of 10,000), milliseconds per listing;
// - download throughput through the service (curl, API key) vs a direct S3 GET of the same object (ratio);
// - upload throughput through the service (curl -F, sha256 computed while streaming, atomic commit) vs a
//   direct S3 put of the same bytes with the minio client (ratio).
// curl runs as its own process, as a user's client would; the direct baselines run in the bench process.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import * as Minio from 'minio';
import { sql } from 'slonik';
import { z } from 'zod';
import { startFileShare } from '@boxyard/file-share/service.ts';
import { fileShareConfigSchema } from '@boxyard/file-share/config.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow, removeBenchBucket } from './env.ts';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const objectBytes = 256 * MiB;
const entries = 10_000;
const listingRuns = 20;
const transferRuns = 5;
const region = 'us-east-1';
const adminPassword = `Bench-${randomBytes(6).toString('hex')}-1A`;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

function clientFor(env: BenchEnv): Minio.Client {
  const url = new URL(env.minio.endpoint);
  return new Minio.Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: url.protocol === 'https:',
    accessKey: env.minio.accessKey,
    secretKey: env.minio.secretKey,
    region,
  });
}

async function seconds(step: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await step();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** MiB/s of the service and the direct baseline, median of interleaved runs (drift hits both alike). */
async function compare(
  name: string,
  service: (i: number) => Promise<void>,
  direct: (i: number) => Promise<void>,
  between?: () => Promise<void>,
): Promise<BenchRow> {
  const serviceRates: number[] = [];
  const directRates: number[] = [];
  for (let i = 0; i < transferRuns; i++) {
    const order =
      i % 2 === 0
        ? ([
            [service, serviceRates],
            [direct, directRates],
          ] as const)
        : ([
            [direct, directRates],
            [service, serviceRates],
          ] as const);
    for (const [step, rates] of order) {
      execFileSync('sync');
      rates.push(objectBytes / MiB / (await seconds(() => step(i))));
      await between?.();
    }
  }
  const value = median(serviceRates);
  const baseline = median(directRates);
  return { name, value: round(value), unit: 'MiB/s', baseline: round(baseline), ratio: round(value / baseline, 3) };
}

async function drain(stream: NodeJS.ReadableStream): Promise<void> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  if (bytes !== objectBytes) throw new Error(`read ${bytes} bytes, expected ${objectBytes}`);
}

/** A file share on the run's MinIO (s3 driver, prefix file-share), rate limit off, admin `admin` with `adminPassword`. */
export function s3FileShareConfig(env: BenchEnv, o: { databaseUrl: string; bucket: string; region: string; adminPassword: string; maxBytes: number }) {
  return fileShareConfigSchema.parse({
    server: { host: '127.0.0.1', port: 0 },
    logging: { level: 'warn' },
    database: { url: o.databaseUrl },
    storage: {
      driver: 's3',
      endpoint: env.minio.endpoint,
      access_key: env.minio.accessKey,
      secret_key: env.minio.secretKey,
      bucket: o.bucket,
      region: o.region,
      prefix: 'file-share',
    },
    rate_limiting: { enabled: false },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { username: 'admin', password: o.adminPassword },
    uploads: { max_bytes: o.maxBytes },
  });
}

export async function benchFileShare(env: BenchEnv): Promise<BenchRow[]> {
  const client = clientFor(env);
  const bucket = `bench-fs-${randomBytes(4).toString('hex')}`;
  await client.makeBucket(bucket, region);
  const databaseUrl = await createBenchDatabase(env, `bench_file_share_${randomBytes(4).toString('hex')}`);
  const config = s3FileShareConfig(env, { databaseUrl, bucket, region, adminPassword, maxBytes: 2 * objectBytes });
  const share = await startFileShare(config);
  const dir = join(env.workDir, 'file-share');
  await mkdir(dir, { recursive: true });
  try {
    const admin = `Basic ${Buffer.from(`admin:${adminPassword}`).toString('base64')}`;
    const keyResponse = await fetch(`${share.url}/api/api-keys`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', permissions: ['downloads', 'uploads', 'delete'] }),
    });
    const token = ((await keyResponse.json()) as { data: { token: string } }).data.token;
    const auth = `Authorization: Bearer ${token}`;
    const rows: BenchRow[] = [];

    // --- listing: 10,000 entries written straight into the tree (the listing never touches storage) ---
    await fetch(`${share.url}/folders`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify({ folderName: 'big' }),
    });
    const folderId = await share.pool.oneFirst(sql.type(z.object({ id: z.unknown() }))`select id from entries where path = '/big'`);
    await share.pool.query(sql.unsafe`
      insert into entries (parent_id, name, path, kind, size, sha256, storage_key)
      select ${String(folderId)}::bigint, 'file-' || lpad(i::text, 5, '0') || '.bin', '/big/file-' || lpad(i::text, 5, '0') || '.bin',
             'file', i, encode(sha256(i::text::bytea), 'hex'), 'files/bench-' || i
      from generate_series(1, ${entries}) i`);
    for (const [format, accept] of [
      ['JSON', 'application/json'],
      ['HTML', 'text/html'],
    ] as const) {
      const fetchListing = async () => {
        const response = await fetch(`${share.url}/big/?limit=${entries}`, { headers: { authorization: `Bearer ${token}`, accept } });
        const body = await response.text();
        if (response.status !== 200 || !body.includes('file-10000.bin')) throw new Error(`listing failed: ${response.status}`);
        return body.length;
      };
      let bytes = 0;
      for (let i = 0; i < 3; i++) bytes = await fetchListing(); // warm-up
      const times: number[] = [];
      for (let i = 0; i < listingRuns; i++) times.push(await seconds(fetchListing));
      const ms = median(times) * 1000;
      rows.push({
        name: `list a ${entries.toLocaleString('en')}-entry folder, ${format} (${round(bytes / MiB, 2)} MiB, ms per listing)`,
        value: round(ms),
        unit: 'ms',
      });
      rows.push({ name: `list a ${entries.toLocaleString('en')}-entry folder, ${format} (listings per second)`, value: round(1000 / ms), unit: '/s' });
    }

    // --- transfers ---
    const data = randomBytes(objectBytes);
    const file = join(dir, 'object.bin');
    await writeFile(file, data);
    const uploadOnce = async (path: string) => {
      const { stdout } = await run('curl', ['-sS', '-H', auth, '-F', `file=@${file}`, '-o', '/dev/null', '-w', '%{http_code}', `${share.url}${path}`], {
        maxBuffer: MiB,
      });
      if (stdout !== '201' && stdout !== '200') throw new Error(`upload answered ${stdout}`);
    };
    // Warm-up, and the object the download comparison reads.
    await uploadOnce('/transfer/object.bin');
    const storageKey = await share.pool.oneFirst(
      sql.type(z.object({ storage_key: z.string() }))`select storage_key from entries where path = '/transfer/object.bin'`,
    );
    await client.putObject(bucket, 'direct/warmup', data.subarray(0, 8 * MiB));

    rows.push(
      await compare(
        `download ${objectBytes / MiB} MiB (service via curl vs direct S3 GET)`,
        async () => {
          await run('curl', ['-sSf', '-H', auth, '-o', '/dev/null', `${share.url}/transfer/object.bin`]);
        },
        async () => drain(await client.getObject(bucket, `file-share/${storageKey}`)),
      ),
    );

    rows.push(
      await compare(
        `upload ${objectBytes / MiB} MiB with sha256 (service via curl -F vs direct S3 put)`,
        async (i) => uploadOnce(`/transfer/upload-${i}.bin`),
        async () => void (await client.putObject(bucket, 'direct/object', Readable.from([data]), objectBytes)),
        // Remove what the run stored, outside the timing, so no background deletion overlaps the next run.
        async () => {
          for (let i = 0; i < transferRuns; i++)
            await fetch(`${share.url}/transfer/upload-${i}.bin`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
          await share.sweeper.sweepNow();
        },
      ),
    );
    return rows;
  } finally {
    await share.close();
    await removeBenchBucket(client, bucket);
  }
}
