// Object storage on MinIO / any S3 API through the `minio` client. Each service gets its own `prefix` in a
// shared bucket; keys are stored as `<prefix>/<key>` and the prefix never shows in results.
// The parts: s3-bucket.ts holds what the functions share and maps S3 errors, s3-put.ts uploads.
import { Client, type BucketItem } from 'minio';
import type { Readable } from 'node:stream';
import { checkRangeShape, isWholeObject } from './byte-range.ts';
import { InvalidKeyError, ObjectNotFoundError, RangeNotSatisfiableError, StorageUnavailableError } from './errors.ts';
import { validateKey, validatePrefix } from './keys.ts';
import { codeOf, objectName, toStorageError, type S3Bucket } from './s3-bucket.ts';
import { getObjectBody } from './s3-get/get-object.ts';
import { s3Multipart } from './s3-multipart.ts';
import { putObject } from './s3-put.ts';
import type { ByteRange, ObjectInfo, ObjectStore } from './types.ts';
import { withoutTrailingSlashes } from '../text/trim.ts';

export interface S3StoreOptions {
  /** `http(s)://host:port` */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  /** Namespace inside the bucket, e.g. `box-repository`; a trailing `/` is implied. */
  prefix?: string;
  /** Multipart part size (default 16 MiB); grown automatically when `maxBytes` needs more than 10,000 parts. */
  partSize?: number;
  /** Parts uploaded concurrently per put (default 2). Memory per put is about (concurrency + 1) x partSize. */
  partConcurrency?: number;
}

const MiB = 1024 * 1024;
const minPartSize = 5 * MiB;
const checkTimeoutMs = 5_000;
/** Until a GET's response head arrives (an unreachable or stuck storage is then a 503, not a hung download). */
const getHeadTimeoutMs = 30_000;
const maxPresignSeconds = 7 * 24 * 3600; // SigV4 limit

function clientFor(options: S3StoreOptions): Client {
  const url = new URL(options.endpoint);
  const useSSL = url.protocol === 'https:';
  return new Client({
    endPoint: url.hostname.replace(/^\[(.*)\]$/, '$1'), // IPv6 literals come bracketed from URL
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    region: options.region, // known up front: no GetBucketLocation round trip before each first request
  });
}

/** '' or `segments/` : the store's namespace, validated like a key. */
function normalizePrefix(prefix: string | undefined): string {
  const trimmed = withoutTrailingSlashes(prefix ?? '');
  return trimmed === '' ? '' : `${validateKey(trimmed)}/`;
}

async function stat(target: S3Bucket, key: string): Promise<ObjectInfo | undefined> {
  const name = objectName(target, key);
  try {
    const info = await target.client.statObject(target.bucket, name);
    const contentType = info.metaData['content-type'] as string | undefined;
    return { key, size: info.size, lastModified: info.lastModified, etag: info.etag, ...(contentType ? { contentType } : {}) };
  } catch (error) {
    const mapped = toStorageError(error, key);
    if (mapped instanceof ObjectNotFoundError) return undefined;
    throw mapped;
  }
}

function list(target: S3Bucket, prefix: string): AsyncIterable<ObjectInfo> {
  validatePrefix(prefix); // eagerly, as the local driver does, not on the first next()
  return listValidated(target, prefix);
}

async function* listValidated({ client, bucket, namespace }: S3Bucket, prefix: string): AsyncGenerator<ObjectInfo> {
  try {
    // V1 listing, recursive: keys come in byte order; a page of 1,000 at a time.
    for await (const item of client.listObjects(bucket, namespace + prefix, true) as AsyncIterable<BucketItem>) {
      if (item.name === undefined) continue; // common prefixes only appear in delimited listings
      yield { key: item.name.slice(namespace.length), size: item.size, lastModified: item.lastModified, etag: item.etag };
    }
  } catch (error) {
    throw toStorageError(error, prefix);
  }
}

async function getObject(target: S3Bucket, key: string, range?: ByteRange): Promise<Readable> {
  const name = objectName(target, key);
  if (range) checkRangeShape(range);
  try {
    // Not minio's getObject: its node:http stream cost 4x the CPU per byte of this reader (see upstream-body.ts).
    return await getObjectBody({
      client: target.client,
      bucket: target.bucket,
      objectName: name,
      ...(isWholeObject(range) ? {} : { range }),
      headTimeoutMs: getHeadTimeoutMs,
    });
  } catch (error) {
    if (codeOf(error) === 'InvalidRange') {
      // MinIO's error names the size (the caller needs it for Content-Range); other servers may not.
      const reported = Number((error as { actualobjectsize?: unknown }).actualobjectsize);
      if (Number.isSafeInteger(reported)) throw new RangeNotSatisfiableError(reported);
      const info = await stat(target, key);
      if (!info) throw new ObjectNotFoundError(key);
      throw new RangeNotSatisfiableError(info.size);
    }
    throw toStorageError(error, key);
  }
}

/**
 * The parts of an upload to `name` that was neither completed nor aborted (the storage went away while it ran,
 * so its abort failed too): they take space no listing of objects shows, until a lifecycle rule reclaims them.
 * Deleting the key removes them as well. One request when there are none (MinIO lists uploads per exact key).
 */
async function abortUnfinishedUploads({ client, bucket }: S3Bucket, name: string): Promise<void> {
  const { uploads } = await client.listIncompleteUploadsQuery(bucket, name, '', '', '');
  for (const upload of uploads ?? []) {
    if (upload.key === name) await client.abortMultipartUpload(bucket, name, upload.uploadId);
  }
}

async function deleteObject(target: S3Bucket, key: string): Promise<void> {
  const name = objectName(target, key);
  try {
    await target.client.removeObject(target.bucket, name); // S3 answers 204 for a missing key too
    await abortUnfinishedUploads(target, name);
  } catch (error) {
    throw toStorageError(error, key);
  }
}

async function removeBatch({ client, bucket }: S3Bucket, names: string[]): Promise<void> {
  const results = await client.removeObjects(bucket, names);
  const failed = results.find((result) => result?.Error);
  if (failed?.Error) throw new Error(`could not delete ${failed.Error.Key}: ${failed.Error.Code} ${failed.Error.Message}`);
}

async function deletePrefix(target: S3Bucket, prefix: string): Promise<number> {
  if (prefix === '') throw new InvalidKeyError(prefix, 'refusing to delete every object; pass a prefix');
  let count = 0;
  let batch: string[] = [];
  try {
    for await (const info of list(target, prefix)) {
      batch.push(target.namespace + info.key);
      if (batch.length === 1000) {
        // DeleteObjects' limit per request
        await removeBatch(target, batch);
        count += batch.length;
        batch = [];
      }
    }
    if (batch.length > 0) await removeBatch(target, batch);
  } catch (error) {
    throw toStorageError(error, prefix);
  }
  return count + batch.length;
}

async function presignedGetUrl(target: S3Bucket, key: string, expiresSeconds: number): Promise<string | undefined> {
  const name = objectName(target, key);
  if (!Number.isInteger(expiresSeconds) || expiresSeconds < 1 || expiresSeconds > maxPresignSeconds) {
    throw new RangeError(`expiresSeconds must be an integer from 1 to ${maxPresignSeconds}`);
  }
  return target.client.presignedGetObject(target.bucket, name, expiresSeconds); // signed locally: no request, no existence check
}

async function presignedPutUrl(target: S3Bucket, key: string, expiresSeconds: number): Promise<string | undefined> {
  const name = objectName(target, key);
  if (!Number.isInteger(expiresSeconds) || expiresSeconds < 1 || expiresSeconds > maxPresignSeconds) {
    throw new RangeError(`expiresSeconds must be an integer from 1 to ${maxPresignSeconds}`);
  }
  return target.client.presignedPutObject(target.bucket, name, expiresSeconds); // signed locally, like GET
}

async function sweepAbandonedUploads({ client, bucket, namespace }: S3Bucket, olderThan: Date): Promise<number> {
  // The whole bucket's listing, filtered to our prefix: MinIO lists incomplete uploads only for '' or an exact
  // key, not for a partial prefix. Uploads of other prefixes (other services) are never touched.
  let removed = 0;
  let keyMarker = '';
  let uploadIdMarker = '';
  try {
    for (;;) {
      const page = await client.listIncompleteUploadsQuery(bucket, '', keyMarker, uploadIdMarker, '');
      for (const upload of page.uploads as { key: string; uploadId: string; initiated?: Date }[]) {
        if (!upload.key.startsWith(namespace) || !upload.initiated || upload.initiated >= olderThan) continue;
        await client.abortMultipartUpload(bucket, upload.key, upload.uploadId);
        removed++;
      }
      if (!page.isTruncated) break;
      keyMarker = page.nextKeyMarker;
      uploadIdMarker = page.nextUploadIdMarker;
    }
  } catch (error) {
    throw toStorageError(error, namespace);
  }
  return removed;
}

async function check({ client, bucket }: S3Bucket, endpoint: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${checkTimeoutMs} ms`)), checkTimeoutMs);
  });
  try {
    const exists = await Promise.race([client.bucketExists(bucket), timeout]);
    if (!exists) throw new Error(`bucket ${bucket} does not exist`);
  } catch (error) {
    throw new StorageUnavailableError(`object storage at ${endpoint} is not usable: ${(error as Error).message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

export function createS3Store(options: S3StoreOptions): ObjectStore {
  const target: S3Bucket = { client: clientFor(options), bucket: options.bucket, namespace: normalizePrefix(options.prefix) };
  const parts = { basePartSize: Math.max(options.partSize ?? 16 * MiB, minPartSize), concurrency: Math.max(1, options.partConcurrency ?? 2) };
  return {
    driver: 's3',
    put: (key, body, putOptions = {}) => putObject(target, parts, key, body, putOptions),
    get: (key, range) => getObject(target, key, range),
    stat: (key) => stat(target, key),
    delete: (key) => deleteObject(target, key),
    deletePrefix: (prefix) => deletePrefix(target, prefix),
    list: (prefix) => list(target, prefix),
    presignedGetUrl: (key, expiresSeconds) => presignedGetUrl(target, key, expiresSeconds),
    presignedPutUrl: (key, expiresSeconds) => presignedPutUrl(target, key, expiresSeconds),
    sweepAbandonedUploads: (olderThan) => sweepAbandonedUploads(target, olderThan),
    check: () => check(target, options.endpoint),
    multipart: s3Multipart(target),
  };
}
