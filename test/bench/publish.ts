// `make bench ONLY=publish`: a 1 GiB box published by Debian's `vagrant cloud publish` (direct upload, s3 driver:
// authenticate, box and version look-ups, provider, presigned PUT by curl, the callback reading the object back to
// verify it, release) against a direct S3 PUT of the same file by curl on a presigned URL, in the same run.
// Goal (issue 29): ≥ 0.8×. One round each: 1 GiB twice over on 2 shared cores is already minutes.
// Where the time goes, printed beside it: the client's own fixed cost (the same publish of a 64 KiB box: Ruby's
// start, the gem's seven API calls, a tiny PUT and callback), and what is left for the callback's read-back (the
// publish minus the fixed cost minus the PUT). The ceiling row is the ratio a callback costing nothing would give.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { finished } from '../harness/child-output.ts';
import { generatedBox, jsonApi, timed, type Service } from './box-repository.ts';
import { startWithBigBox } from './downloads.ts';
import { type BenchEnv, type BenchRow, createBenchBucket } from './env.ts';
import { removeBenchBucket } from './env.ts';
import { alternate, curlPut, median, round } from './load.ts';

const MiB = 1024 * 1024;
const boxBytes = 1024 * MiB;
const region = 'us-east-1';
const ROUNDS = Number(process.env.BENCH_PUBLISH_ROUNDS ?? 1);

async function vagrantPublish(home: string, serverUrl: string, key: string, version: string, boxFile: string): Promise<void> {
  const child = spawn('vagrant', ['cloud', 'publish', 'bench/big', version, 'virtualbox', boxFile, '--release', '-f'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      VAGRANT_HOME: join(home, 'vagrant.d'),
      VAGRANT_CHECKPOINT_DISABLE: '1',
      VAGRANT_SERVER_URL: serverUrl,
      VAGRANT_CLOUD_TOKEN: key,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = await finished(child);
  if (result.code !== 0) throw new Error(`vagrant cloud publish: ${result.code}\n${result.output}`);
}

export async function benchPublish(env: BenchEnv): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const boxFile = join(env.workDir, `publish-${randomBytes(4).toString('hex')}.box`);
  const home = join(env.workDir, `vagrant-${randomBytes(4).toString('hex')}`);
  await mkdir(home, { recursive: true });
  const tinyBox = join(env.workDir, `publish-tiny-${randomBytes(4).toString('hex')}.box`);
  await pipeline(generatedBox(boxBytes), createWriteStream(boxFile));
  await pipeline(generatedBox(64 * 1024), createWriteStream(tinyBox));
  const { minio, bucket } = await createBenchBucket(env, 'pub');
  let service: Service | undefined;
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
    const api = jsonApi(() => s3.service.url);
    const admin = (await api('POST', '/api/auth/signin', { username: 'admin', password: s3.config.admin.password })).access_token as string;
    const key = (await api('POST', '/api/service-accounts', { organization: 'bench', role: 'moderator', description: 'bench publisher' }, admin))
      .token as string;
    let published = 0;
    const publish = (file: string) => timed(() => vagrantPublish(home, s3.service.url, key, `2.0.${published++}`, file));
    const results = await alternate(ROUNDS, {
      publish: () => publish(boxFile),
      put: async () => timed(async () => curlPut(await minio.presignedPutObject(bucket, 'direct/upload', 600), boxFile)),
      fixed: async () => median([await publish(tinyBox), await publish(tinyBox), await publish(tinyBox)]),
    });
    const [publishSeconds, putSeconds, fixedSeconds] = [median(results.publish!), median(results.put!), median(results.fixed!)];
    rows.push(...publishRows(publishSeconds, putSeconds, fixedSeconds));
  } finally {
    await service?.stop();
    await removeBenchBucket(minio, bucket);
    await rm(boxFile, { force: true });
    await rm(tinyBox, { force: true });
    await rm(home, { recursive: true, force: true });
  }
  return rows;
}

function publishRows(publishSeconds: number, putSeconds: number, fixedSeconds: number): BenchRow[] {
  const rate = (seconds: number) => round(boxBytes / MiB / seconds);
  const ratio = putSeconds / publishSeconds;
  const readBack = Math.max(0, publishSeconds - fixedSeconds - putSeconds);
  const ceiling = putSeconds / (putSeconds + fixedSeconds);
  const rows: BenchRow[] = [
    {
      name: 'vagrant cloud publish 1 GiB, direct, s3 driver (vs a direct S3 PUT of the same file)',
      value: rate(publishSeconds),
      unit: 'MiB/s',
      baseline: rate(putSeconds),
      ratio: round(ratio, 3),
      goal: '≥ 0.80×',
      pass: ratio >= 0.8,
    },
    { name: "  of which the client's fixed cost (the same publish of a 64 KiB box)", value: round(fixedSeconds, 2), unit: 's' },
    {
      name: `  of which the callback's read-back of 1 GiB, sha256 and box check (publish - fixed - PUT${readBack > 0 ? `; ${rate(readBack)} MiB/s` : ''})`,
      value: round(readBack, 2),
      unit: 's',
    },
    { name: '  ceiling: the ratio if the callback cost nothing (PUT / (PUT + fixed)), in %', value: round(ceiling * 100, 1), unit: '%' },
  ];
  for (const row of rows) console.error(`  [bench] ${row.name}: ${row.value} ${row.unit}`);
  return rows;
}
