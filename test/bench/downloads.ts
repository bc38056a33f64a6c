// `make bench ONLY=downloads`: a 512 MiB box downloaded through the service against the plainest way to read the
// same bytes, in alternating rounds (medians of 3), 1 and 4 streams:
//  - local driver vs `python3 -m http.server` serving the stored file from the same directory;
//  - s3 driver vs a direct S3 GET of the object (the same client on a presigned URL), and with `download_links.redirect` on, the
//    service answering 302 to a presigned storage URL (the client then reads from storage itself).
// Goals (issue 13): ≥ 0.9× the baseline.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type * as Minio from 'minio';
import pg from 'pg';
import { generatedBox, httpUpload, createPublicBox, startService, type Service } from './box-repository.ts';
import { type BenchEnv, type BenchRow, createBenchBucket, createBenchDatabase, removeBenchBucket } from './env.ts';
import { alternate, curlUpload, downloadMiBs, median, round } from './load.ts';

const GiB = 1024 ** 3;
// 512 MiB: big enough that per-request costs vanish, small enough for 24 transfers on a loaded 2-core machine.
const boxBytes = 512 * 1024 ** 2;
const region = 'us-east-1';
const boxPath = '/bench/boxes/big/versions/1.0.0/providers/virtualbox/amd64/vagrant.box';

/** A box repository with `storage`, holding bench/big 1.0.0 (virtualbox, amd64) of `diskBytes`; returns the file's storage key. */
export async function startWithBigBox(env: BenchEnv, storage: Record<string, unknown>, diskBytes: number, extra: Record<string, unknown> = {}) {
  const databaseUrl = await createBenchDatabase(env, `bench_dl_${randomBytes(4).toString('hex')}`);
  const adminPassword = `Bench-${randomBytes(12).toString('base64url')}1a`;
  const config = {
    server: { host: '127.0.0.1', port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl },
    storage,
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: adminPassword },
    rate_limiting: { enabled: false },
    uploads: { max_bytes: 6 * GiB },
    ...extra,
  };
  const service = await startService(config);
  const { token, uploadUrl: uploadUrlOf } = await createPublicBox(service.url, adminPassword, { org: 'bench', box: 'big', versions: ['1.0.0'] });
  const uploadUrl = `${uploadUrlOf('1.0.0')}?replace=true`;
  /** Uploads a generated box of `bytes` from the bench process, or with curl the box file at `path`. */
  const upload = async (bytes = diskBytes, path?: string) => {
    const headers = { 'x-access-token': token };
    const result = path ? await curlUpload(uploadUrl, path, headers) : await httpUpload(uploadUrl, headers, generatedBox(bytes));
    if (result.status >= 300) throw new Error(`upload: ${result.status} ${result.text}`);
  };
  await upload();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const file = (await client.query<{ storage_key: string; size: string }>('select storage_key, size from box_repository.files limit 1')).rows[0]!;
  await client.end();
  return { service, config, storageKey: file.storage_key, size: Number(file.size), upload };
}

async function startPythonServer(dir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn('python3', ['-u', '-m', 'http.server', '--bind', '127.0.0.1', '--directory', dir, '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /port (\d+)/.exec(out);
      if (match) resolve(`http://127.0.0.1:${match[1]}`);
    });
    child.once('exit', (code) => reject(new Error(`python3 -m http.server exited with ${code}: ${out}`)));
  });
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Adds a row and shows it at once on stderr (a section on a loaded machine takes minutes). */
export function progress(rows: BenchRow[], row: BenchRow): void {
  rows.push(row);
  console.error(`  [bench] ${row.name}: ${row.value} ${row.unit} vs ${row.baseline ?? '-'} (${row.ratio ?? '-'})`);
}

const ratioRow = (name: string, value: number, baseline: number, goal: number): BenchRow => ({
  name,
  value: round(value),
  unit: 'MiB/s',
  baseline: round(baseline),
  ratio: round(value / baseline, 3),
  goal: `≥ ${goal.toFixed(2)}×`,
  pass: value / baseline >= goal,
});

export async function benchDownloads(env: BenchEnv): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  // Local driver vs python3 -m http.server on the same file.
  const root = join(env.workDir, `dl-local-${randomBytes(4).toString('hex')}`);
  await mkdir(root, { recursive: true });
  let service: Service | undefined;
  let python: { stop(): Promise<void> } | undefined;
  try {
    const local = await startWithBigBox(env, { driver: 'local', root }, boxBytes);
    service = local.service;
    const pythonServer = await startPythonServer(dirname(join(root, 'objects', local.storageKey)));
    python = pythonServer;
    const direct = `${pythonServer.url}/${local.storageKey.split('/').at(-1)}`;
    for (const streams of [1, 4]) {
      const results = await alternate(3, {
        service: () => downloadMiBs(`${local.service.url}${boxPath}`, { streams, bytes: local.size }),
        baseline: () => downloadMiBs(direct, { streams, bytes: local.size }),
      });
      progress(
        rows,
        ratioRow(
          `download 512 MiB, local driver, ${streams} stream${streams > 1 ? 's' : ''} (vs python3 -m http.server)`,
          median(results.service!),
          median(results.baseline!),
          0.9,
        ),
      );
    }
  } finally {
    await Promise.allSettled([service?.stop(), python?.stop()]);
    service = undefined;
  }

  // S3 driver vs a direct GET; then the same with presigned redirects.
  const { minio, bucket } = await createBenchBucket(env, 'dl');
  const storage = {
    driver: 's3',
    endpoint: env.minio.endpoint,
    access_key: env.minio.accessKey,
    secret_key: env.minio.secretKey,
    bucket,
    region,
    prefix: 'box-repository',
  };
  let redirecting: Service | undefined;
  try {
    const s3 = await startWithBigBox(env, storage, boxBytes);
    service = s3.service;
    const objectName = `box-repository/${await firstKey(minio, bucket)}`;
    const size = (await minio.statObject(bucket, objectName)).size;
    // The direct GET with the same HTTP client as the service's rows (a presigned URL: plain GETs, no signing work).
    const presigned = await minio.presignedGetObject(bucket, objectName, 3600);
    const directGet = (streams: number) => downloadMiBs(presigned, { streams, bytes: size });
    for (const streams of [1, 4]) {
      const results = await alternate(3, {
        service: () => downloadMiBs(`${service!.url}${boxPath}`, { streams, bytes: size }),
        direct: () => directGet(streams),
      });
      progress(
        rows,
        ratioRow(
          `download 512 MiB, s3 driver, ${streams} stream${streams > 1 ? 's' : ''} (vs direct S3 GET)`,
          median(results.service!),
          median(results.direct!),
          0.9,
        ),
      );
    }
    // The same file with download_links.redirect_to_storage: 302 to a presigned URL, then storage directly.
    redirecting = await startService({ ...s3.config, download_links: { redirect_to_storage: true } });
    const redirected = await alternate(3, {
      service: () => downloadMiBs(`${redirecting!.url}${boxPath}`, { streams: 1, bytes: size }),
      direct: () => directGet(1),
    });
    progress(
      rows,
      ratioRow(
        'download 512 MiB, s3 driver with redirect_to_storage, 1 stream (vs direct S3 GET)',
        median(redirected.service!),
        median(redirected.direct!),
        0.9,
      ),
    );
  } finally {
    await Promise.allSettled([service?.stop(), redirecting?.stop()]);
    await removeBenchBucket(minio, bucket);
  }
  return rows;
}

async function firstKey(minio: Minio.Client, bucket: string): Promise<string> {
  for await (const item of minio.listObjectsV2(bucket, 'box-repository/', true)) return (item as { name: string }).name.slice('box-repository/'.length);
  throw new Error('no object stored');
}
