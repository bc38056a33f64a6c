// `make bench ONLY=uploads`: a 512 MiB box uploaded through the service (box check, sha256, limits, atomic
// commit) against what the machine allows for the same bytes, measured in alternating rounds (medians of 3):
// min(sha256 throughput in Node, storage write throughput), the write being an fsync'd file write in the local
// driver's directory, or a direct S3 PUT of the same file (curl, presigned URL) for the s3 driver. Goal (issue 13): ≥ 0.8×.
// The box is a file on disk sent by curl (as a user uploads one), so the client costs the 2 cores little.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { generatedBox, timed, type Service } from './box-repository.ts';
import { progress, startWithBigBox } from './downloads.ts';
import { type BenchEnv, type BenchRow, createBenchBucket } from './env.ts';
import { removeBenchBucket } from './env.ts';
import { alternate, curlPut, median, round } from './load.ts';

const MiB = 1024 * 1024;
const boxBytes = 512 * MiB;
const region = 'us-east-1';
const piece = randomBytes(MiB);

const sha256MiBs = () => {
  const seconds = timedSync(() => {
    const hash = createHash('sha256');
    for (let i = 0; i < boxBytes / MiB; i++) hash.update(piece);
    hash.digest();
  });
  return boxBytes / MiB / seconds;
};

function timedSync(run: () => void): number {
  const started = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function fsyncWriteMiBs(dir: string): Promise<number> {
  const path = join(dir, `write-${randomBytes(4).toString('hex')}`);
  try {
    const seconds = await timed(async () => {
      const file = await open(path, 'wx');
      try {
        for (let i = 0; i < boxBytes / MiB; i += 4) await file.write(Buffer.concat([piece, piece, piece, piece]));
        await file.sync();
      } finally {
        await file.close();
      }
    });
    return boxBytes / MiB / seconds;
  } finally {
    await rm(path, { force: true });
  }
}

function uploadRow(name: string, service: number[], hash: number[], write: number[], writeName: string): BenchRow {
  const floor = Math.min(median(hash), median(write));
  return {
    name: `${name} (vs min(sha256 ${round(median(hash))}, ${writeName} ${round(median(write))}))`,
    value: round(median(service)),
    unit: 'MiB/s',
    baseline: round(floor),
    ratio: round(median(service) / floor, 3),
    goal: '≥ 0.80×',
    pass: median(service) / floor >= 0.8,
  };
}

export async function benchUploads(env: BenchEnv): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const boxFile = join(env.workDir, `upload-${randomBytes(4).toString('hex')}.box`);
  await pipeline(generatedBox(boxBytes), createWriteStream(boxFile));
  const root = join(env.workDir, `up-local-${randomBytes(4).toString('hex')}`);
  await mkdir(root, { recursive: true });
  let service: Service | undefined;
  try {
    const local = await startWithBigBox(env, { driver: 'local', root }, MiB);
    service = local.service;
    const results = await alternate(3, {
      service: async () => boxBytes / MiB / (await timed(() => local.upload(boxBytes, boxFile))),
      hash: async () => sha256MiBs(),
      write: () => fsyncWriteMiBs(root),
    });
    progress(rows, uploadRow('upload 512 MiB box, local driver', results.service!, results.hash!, results.write!, "fsync'd write"));
  } finally {
    await service?.stop();
    service = undefined;
  }

  const { minio, bucket } = await createBenchBucket(env, 'up');
  try {
    const s3 = await startWithBigBox(
      env,
      {
        driver: 's3',
        endpoint: env.minio.endpoint,
        access_key: env.minio.accessKey,
        secret_key: env.minio.secretKey,
        bucket,
        region,
        prefix: 'box-repository',
      },
      MiB,
    );
    service = s3.service;
    const results = await alternate(3, {
      service: async () => boxBytes / MiB / (await timed(() => s3.upload(boxBytes, boxFile))),
      hash: async () => sha256MiBs(),
      // The same file PUT straight to storage by curl on a presigned URL: what the bytes cost without the service.
      write: async () =>
        boxBytes /
        MiB /
        (await timed(async () => {
          const url = await minio.presignedPutObject(bucket, 'direct/upload', 600);
          await curlPut(url, boxFile);
        })),
    });
    progress(rows, uploadRow('upload 512 MiB box, s3 driver', results.service!, results.hash!, results.write!, 'direct S3 put'));
  } finally {
    await service?.stop();
    await removeBenchBucket(minio, bucket);
    await rm(boxFile, { force: true });
  }
  return rows;
}
