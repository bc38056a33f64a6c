// Throughput of the kit's object store against the plainest way to move the same bytes, in the same run on
// the same machine: the kit's s3 driver vs the minio client's own putObject/getObject, and the local driver
// vs a plain file write/read. `ratio` = kit / direct, so 1.0 means the layer (hashing, counting, limits,
// atomic commit) costs nothing measurable.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as Minio from 'minio';
import { createLocalStore, createS3Store } from '@boxyard/kit/storage/index.ts';
import { removeBenchBucket } from './env.ts';

export type BenchRow = {
  name: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  /** The goal as printed (`≥ 0.90×`, `≥ 4000 req/s, p99 ≤ 20 ms`) and whether this run met it. */
  goal?: string;
  pass?: boolean;
};

export interface StorageBenchEnv {
  minio: { endpoint: string; accessKey: string; secretKey: string };
  bucketPrefix?: string;
}

const MiB = 1024 * 1024;
const objectBytes = 256 * MiB;
const chunkBytes = MiB;
const repeats = 5; // median of five: a slow run (GC, page cache writeback, MinIO housekeeping) doesn't decide the result
const region = 'us-east-1';

/** The object as an upload would arrive: 1 MiB chunks of unknown total length. */
async function* chunksOf(data: Buffer): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < data.length; offset += chunkBytes) yield data.subarray(offset, offset + chunkBytes);
}

/** Reads a whole object, checking it really was whole (a short read would look fast). */
async function drain(stream: NodeJS.ReadableStream): Promise<void> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  if (bytes !== objectBytes) throw new Error(`read ${bytes} bytes, expected ${objectBytes}`);
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** MiB/s of kit and direct, median over `repeats`, interleaved in alternating order so drift hits both alike. */
async function compare(name: string, kit: () => Promise<void>, direct: () => Promise<void>): Promise<BenchRow> {
  const timed = async (run: () => Promise<void>): Promise<number> => {
    // Write back the previous run's dirty pages first, or its fsync would be billed to this run.
    execFileSync('sync');
    const started = process.hrtime.bigint();
    await run();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return objectBytes / MiB / seconds;
  };
  const kitRates: number[] = [];
  const directRates: number[] = [];
  for (let i = 0; i < repeats; i++) {
    if (i % 2 === 0) {
      kitRates.push(await timed(kit));
      directRates.push(await timed(direct));
    } else {
      directRates.push(await timed(direct));
      kitRates.push(await timed(kit));
    }
  }
  const value = median(kitRates);
  const baseline = median(directRates);
  return {
    name,
    value: Math.round(value * 10) / 10,
    unit: 'MiB/s',
    baseline: Math.round(baseline * 10) / 10,
    ratio: Math.round((value / baseline) * 1000) / 1000,
  };
}

function clientFor(env: StorageBenchEnv): Minio.Client {
  const url = new URL(env.minio.endpoint);
  const useSSL = url.protocol === 'https:';
  return new Minio.Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: env.minio.accessKey,
    secretKey: env.minio.secretKey,
    region,
  });
}

export async function benchStorage(env: StorageBenchEnv): Promise<BenchRow[]> {
  const data = randomBytes(objectBytes); // generated once, streamed by every run
  const client = clientFor(env);
  const bucket = `${env.bucketPrefix ?? 'bench'}-storage-${randomBytes(4).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), 'boxyard-bench-storage-'));
  await client.makeBucket(bucket, region);
  try {
    const s3 = createS3Store({ ...env.minio, bucket, region, prefix: 'kit' });
    const local = createLocalStore({ root: join(dir, 'store') });
    await mkdir(join(dir, 'store')); // the driver wants an existing root, as a mounted volume would be
    const plainFile = join(dir, 'plain.bin');

    // Warm-up: connections, JIT, page cache for the directory.
    await s3.put('warmup', chunksOf(data.subarray(0, 8 * MiB)));
    await client.putObject(bucket, 'direct/warmup', data.subarray(0, 8 * MiB));
    await local.put('warmup', chunksOf(data.subarray(0, 8 * MiB)));

    const rows: BenchRow[] = [];
    // Local first: MinIO deletes overwritten data in the background, which would slow the disk for whatever follows.
    rows.push(
      await compare(
        'local put 256 MiB (kit local driver vs fs write + fsync)',
        async () => void (await local.put('object', chunksOf(data))),
        // A new file with the same durability as the driver (fsync before close), so the ratio is the layer's own
        // cost. (Truncating the old file instead would drop its dirty pages unwritten, flattering the baseline.)
        async () => {
          await rm(plainFile, { force: true });
          await pipeline(Readable.from(chunksOf(data)), createWriteStream(plainFile, { flags: 'wx', flush: true }));
        },
      ),
    );
    rows.push(
      await compare(
        'local get 256 MiB (kit local driver vs fs read)',
        async () => void (await drain(await local.get('object'))),
        async () => void (await drain(createReadStream(plainFile, { highWaterMark: chunkBytes }))),
      ),
    );
    rows.push(
      await compare(
        's3 put 256 MiB (kit s3 driver vs minio putObject)',
        async () => void (await s3.put('object', chunksOf(data))),
        // The direct client gets the size up front, its best case (one 64 MiB-part multipart upload).
        async () => void (await client.putObject(bucket, 'direct/object', Readable.from(chunksOf(data)), objectBytes)),
      ),
    );
    // Each side reads what it wrote: the kit's 16 MiB parts vs the client's 64 MiB parts is part of the cost.
    rows.push(
      await compare(
        's3 get 256 MiB (kit s3 driver vs minio getObject)',
        async () => void (await drain(await s3.get('object'))),
        async () => void (await drain(await client.getObject(bucket, 'direct/object'))),
      ),
    );
    return rows;
  } finally {
    await removeBenchBucket(client, bucket);
    await rm(dir, { recursive: true, force: true });
  }
}
