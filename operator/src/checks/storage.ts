// Object storage as the operator sees it: before a rollout, the bucket must exist (or be created when the spec
// allows); on deletion with deletionPolicy Delete, the objects under the prefix go (and the bucket, if the operator
// created it).
import type * as Minio from 'minio';
import { CheckFailure, NETWORK_ERRORS, withTimeout } from './check-failure.ts';
import { withoutTrailingSlashes } from '@boxyard/kit/text/trim.ts';

const TIMEOUT_MS = 10_000;

export interface StorageTarget {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  prefix: string;
}

/** The minio client, loaded on first use (about 40 MB resident): TerminalPools never need it. */
async function clientFor(target: StorageTarget): Promise<Minio.Client> {
  const { Client } = await import('minio');
  const url = new URL(target.endpoint);
  const useSSL = url.protocol === 'https:';
  return new Client({
    endPoint: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: target.accessKey,
    secretKey: target.secretKey,
    region: target.region,
  });
}

function toFailure(error: unknown, target: StorageTarget, where: string): CheckFailure {
  if (error instanceof CheckFailure) return error;
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message || code;
  if (['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'Forbidden'].includes(code) || /forbidden|access denied/i.test(message)) {
    return new CheckFailure(
      'StorageAccessDenied',
      `object storage at ${target.endpoint} refused the credentials in ${where} for bucket "${target.bucket}" (${code || message}): fix the keys or grant them access to the bucket`,
    );
  }
  if (NETWORK_ERRORS.has(code) || /timeout/i.test(message)) {
    return new CheckFailure(
      'StorageUnreachable',
      `cannot reach object storage at ${target.endpoint}: ${message}. Check spec.storage.endpoint and that the operator's pod can reach it`,
    );
  }
  return new CheckFailure('StorageCheckFailed', `object storage at ${target.endpoint}, bucket "${target.bucket}": ${message}`);
}

/** Ensures the bucket exists; `created` is true when this call made it. */
export async function checkBucket(target: StorageTarget, create: boolean, where: string): Promise<{ created: boolean }> {
  const client = await clientFor(target);
  try {
    if (await withTimeout(client.bucketExists(target.bucket), TIMEOUT_MS, 'bucket check')) return { created: false };
    if (!create) {
      throw new CheckFailure(
        'BucketNotFound',
        `bucket "${target.bucket}" does not exist at ${target.endpoint}: create it, or set spec.storage.createBucket: true`,
      );
    }
    try {
      await withTimeout(client.makeBucket(target.bucket, target.region), TIMEOUT_MS, 'bucket creation');
      return { created: true };
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'BucketAlreadyOwnedByYou') return { created: false };
      throw error;
    }
  } catch (error) {
    throw toFailure(error, target, where);
  }
}

/** Deletes every object under the prefix (the whole bucket when the prefix is empty); returns how many. */
export async function deleteObjects(target: StorageTarget, where: string): Promise<number> {
  const client = await clientFor(target);
  const prefix = target.prefix ? `${withoutTrailingSlashes(target.prefix)}/` : '';
  let deleted = 0;
  try {
    if (!(await withTimeout(client.bucketExists(target.bucket), TIMEOUT_MS, 'bucket check'))) return 0;
    let batch: string[] = [];
    const flush = async () => {
      if (!batch.length) return;
      await client.removeObjects(target.bucket, batch);
      deleted += batch.length;
      batch = [];
    };
    for await (const item of client.listObjectsV2(target.bucket, prefix, true)) {
      if (!item.name) continue;
      batch.push(item.name);
      if (batch.length === 1000) await flush();
    }
    await flush();
    return deleted;
  } catch (error) {
    throw toFailure(error, target, where);
  }
}

export async function deleteBucket(target: StorageTarget, where: string): Promise<void> {
  const client = await clientFor(target);
  try {
    await client.removeBucket(target.bucket);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'NoSuchBucket') return;
    throw toFailure(error, target, where);
  }
}
