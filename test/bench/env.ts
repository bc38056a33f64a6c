// What every bench receives: the real components the runner started, and a scratch directory.
import { randomBytes } from 'node:crypto';
import * as Minio from 'minio';
export type { BenchRow } from './storage.ts';

export interface BenchEnv {
  minio: { endpoint: string; accessKey: string; secretKey: string };
  /** Superuser URL of the run's PostgreSQL: create your own database in it. */
  postgresAdminUrl: string;
  /** Scratch directory (readable by the `postgres` user), removed after the run. */
  workDir: string;
}

/** Creates a database on the bench's PostgreSQL and returns its URL. */
export async function createBenchDatabase(env: BenchEnv, name: string): Promise<string> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: env.postgresAdminUrl });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(env.postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Empties and removes a bench's bucket (objects and unfinished multipart uploads); best effort, after a run. */
export async function removeBenchBucket(client: Minio.Client, bucket: string): Promise<void> {
  try {
    await emptyAndRemove(client, bucket);
  } catch {
    // already gone, or the run's MinIO is stopping: nothing to clean
  }
}

async function emptyAndRemove(client: Minio.Client, bucket: string): Promise<void> {
  const names: string[] = [];
  for await (const item of client.listObjects(bucket, '', true)) {
    const name = (item as { name?: string }).name;
    if (name) names.push(name);
  }
  if (names.length > 0) await client.removeObjects(bucket, names);
  for await (const upload of client.listIncompleteUploads(bucket, '', true)) {
    await client.abortMultipartUpload(bucket, upload.key, upload.uploadId);
  }
  await client.removeBucket(bucket);
}

/** A MinIO client for the run's server and a new bucket `bench-<name>-<random>` in it. */
export async function createBenchBucket(env: Pick<BenchEnv, 'minio'>, name: string): Promise<{ minio: Minio.Client; bucket: string }> {
  const url = new URL(env.minio.endpoint);
  const minio = new Minio.Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: false,
    accessKey: env.minio.accessKey,
    secretKey: env.minio.secretKey,
    region: 'us-east-1',
  });
  const bucket = `bench-${name}-${randomBytes(4).toString('hex')}`;
  await minio.makeBucket(bucket, 'us-east-1');
  return { minio, bucket };
}
