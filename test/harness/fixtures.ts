// Per-test-file isolation on the shared components: a fresh database and a fresh bucket.
import { randomBytes } from 'node:crypto';
import * as Minio from 'minio';
import pg from 'pg';
import { inject } from 'vitest';

const suffix = () => randomBytes(6).toString('hex');

/** Creates an empty database on the run's PostgreSQL (or the one at `adminUrl`) and returns its URL. */
export async function createTestDatabase(prefix = 't', adminUrl?: string): Promise<string> {
  const admin = new URL(adminUrl ?? inject('postgresAdminUrl'));
  const name = `${prefix}_${suffix()}`;
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  admin.pathname = `/${name}`;
  return admin.toString();
}

export interface TestBucket {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  client: Minio.Client;
}

/**
 * The S3 servers of the run that the storage suites run against, as a matrix (`describe.each(s3Servers)`): MinIO
 * and SeaweedFS (global-setup.ts starts both once per run).
 */
export const s3Servers = [{ server: 'minio' }, { server: 'seaweedfs' }] as const;
export type S3ServerName = (typeof s3Servers)[number]['server'];

/** The endpoint and credentials of one of the run's S3 servers. */
export function s3Server(name: S3ServerName): { endpoint: string; accessKey: string; secretKey: string } {
  return inject(name);
}

/** Creates an empty bucket on the run's MinIO (or on `server`). */
export async function createTestBucket(prefix = 't', server?: { endpoint: string; accessKey: string; secretKey: string }): Promise<TestBucket> {
  const { endpoint, accessKey, secretKey } = server ?? inject('minio');
  const url = new URL(endpoint);
  const client = new Minio.Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: url.protocol === 'https:',
    accessKey,
    secretKey,
    region: 'us-east-1',
  });
  const bucket = `${prefix}-${suffix()}`;
  await client.makeBucket(bucket, 'us-east-1');
  return { endpoint, accessKey, secretKey, bucket, region: 'us-east-1', client };
}

/** Keys of the multipart uploads started in the bucket and neither completed nor aborted, sorted. */
export async function incompleteUploads(bucket: TestBucket): Promise<string[]> {
  const keys: string[] = [];
  for await (const upload of bucket.client.listIncompleteUploads(bucket.bucket, '', true)) keys.push((upload as { key: string }).key);
  return keys.sort();
}
