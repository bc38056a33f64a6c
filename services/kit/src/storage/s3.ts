// Object storage on MinIO / any S3 API through the `minio` client. Each service gets its own `prefix` in a
// shared bucket; keys are stored as `<prefix>/<key>` and the prefix never shows in results.
import { Client, type BucketItem } from 'minio';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkRangeShape, isWholeObject } from './byte-range.ts';
import {
  InvalidKeyError,
  KeyConflictError,
  ObjectNotFoundError,
  RangeNotSatisfiableError,
  StorageError,
  StorageFullError,
  StorageUnavailableError,
} from './errors.ts';
import { HashingCounter } from './hashing-counter.ts';
import { validateKey, validatePrefix } from './keys.ts';
import { getObjectBody } from './s3-get/get-object.ts';
import { maxParts, S3Upload } from './s3-upload.ts';
import type { ByteRange, ObjectInfo, ObjectStore, PutBody, PutOptions, PutResult } from './types.ts';
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

const notFoundCodes = new Set(['NoSuchKey', 'NotFound']);
const fullCodes = new Set(['XMinioStorageFull', 'StorageFull', 'XMinioAdminNoSpace', 'InsufficientStorage']);
const conflictCodes = new Set(['XMinioParentIsObject', 'XMinioObjectExistsAsDirectory']);
const invalidKeyCodes = new Set(['KeyTooLongError', 'XMinioInvalidObjectName', 'XMinioInvalidResourceName']);
const unavailableCodes = new Set(['NoSuchBucket', 'SlowDown', 'ServiceUnavailable', 'XMinioServerNotInitialized', 'AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch']);
const networkErrnos = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE',
  // undici's (part uploads)
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED',
  // TLS to an https endpoint that cannot be trusted: the operator's to fix, not the caller's, and not a crash
  'EPROTO', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY']);

const codeOf = (error: unknown): string | undefined => (error as { code?: unknown } | undefined)?.code as string | undefined;

/** S3 / MinIO / socket errors as storage errors; anything unrecognised is passed on as is. */
function toStorageError(error: unknown, key: string): unknown {
  if (error instanceof StorageError) return error;
  const code = codeOf(error) ?? '';
  if (notFoundCodes.has(code)) return new ObjectNotFoundError(key);
  if (fullCodes.has(code)) return new StorageFullError({ cause: error });
  if (conflictCodes.has(code)) return new KeyConflictError(key, { cause: error });
  if (invalidKeyCodes.has(code) || (error as Error | undefined)?.name === 'InvalidObjectNameError') {
    return new InvalidKeyError(key, (error as Error).message);
  }
  if (unavailableCodes.has(code) || networkErrnos.has(code)) {
    return new StorageUnavailableError(`object storage unavailable: ${(error as Error).message || code}`, { cause: error });
  }
  return error;
}

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

export function createS3Store(options: S3StoreOptions): ObjectStore {
  const client = clientFor(options);
  const { bucket } = options;
  const namespace = normalizePrefix(options.prefix);
  const basePartSize = Math.max(options.partSize ?? 16 * MiB, minPartSize);
  const concurrency = Math.max(1, options.partConcurrency ?? 2);

  const objectName = (key: string): string => namespace + validateKey(key);

  async function stat(key: string): Promise<ObjectInfo | undefined> {
    const name = objectName(key);
    try {
      const info = await client.statObject(bucket, name);
      const contentType = info.metaData['content-type'] as string | undefined;
      return { key, size: info.size, lastModified: info.lastModified, etag: info.etag, ...(contentType ? { contentType } : {}) };
    } catch (error) {
      const mapped = toStorageError(error, key);
      if (mapped instanceof ObjectNotFoundError) return undefined;
      throw mapped;
    }
  }

  function list(prefix: string): AsyncIterable<ObjectInfo> {
    validatePrefix(prefix); // eagerly, as the local driver does, not on the first next()
    return listValidated(prefix);
  }

  async function* listValidated(prefix: string): AsyncGenerator<ObjectInfo> {
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

  /**
   * MinIO stores both `a` and `a/b` but then hides `a/b` from listings (so deletePrefix would leak it);
   * refuse such keys up front, as the local driver must. Racy against a concurrent put, but cheap:
   * one HEAD per ancestor plus one 1-key listing, in parallel.
   */
  async function assertNoKeyConflict(key: string, name: string): Promise<void> {
    const segments = key.split('/');
    const ancestors = segments.slice(0, -1).map((_, i) => namespace + segments.slice(0, i + 1).join('/'));
    const found = await Promise.all([
      ...ancestors.map((ancestor) =>
        client.statObject(bucket, ancestor).then(
          () => true,
          (error: unknown) => {
            if (notFoundCodes.has(codeOf(error) ?? '')) return false;
            throw error;
          },
        ),
      ),
      client.listObjectsQuery(bucket, `${name}/`, '', { MaxKeys: 1, Delimiter: '/' }).then((page) => (page.objects?.length ?? 0) > 0),
    ]);
    if (found.some(Boolean)) throw new KeyConflictError(key);
  }

  /**
   * The parts of an upload to `name` that was neither completed nor aborted (the storage went away while it ran,
   * so its abort failed too): they take space no listing of objects shows, until a lifecycle rule reclaims them.
   * Deleting the key removes them as well. One request when there are none (MinIO lists uploads per exact key).
   */
  async function abortUnfinishedUploads(name: string): Promise<void> {
    const { uploads } = await client.listIncompleteUploadsQuery(bucket, name, '', '', '');
    for (const upload of uploads ?? []) {
      if (upload.key === name) await client.abortMultipartUpload(bucket, name, upload.uploadId);
    }
  }

  async function removeBatch(names: string[]): Promise<void> {
    const results = await client.removeObjects(bucket, names);
    const failed = results.find((result) => result?.Error);
    if (failed?.Error) throw new Error(`could not delete ${failed.Error.Key}: ${failed.Error.Code} ${failed.Error.Message}`);
  }

  return {
    driver: 's3',

    async put(key: string, body: PutBody, putOptions: PutOptions = {}): Promise<PutResult> {
      const name = objectName(key);
      // Parts must be big enough that the allowed size fits in 10,000 of them; the limit is capped to match.
      const partSize = Math.max(basePartSize, Math.ceil((putOptions.maxBytes ?? 0) / maxParts));
      const maxBytes = Math.min(putOptions.maxBytes ?? Number.POSITIVE_INFINITY, partSize * maxParts);
      const counter = new HashingCounter({ maxBytes, ...(putOptions.expectedSha256 ? { expectedSha256: putOptions.expectedSha256 } : {}), ...(putOptions.size !== undefined ? { size: putOptions.size } : {}) });
      const upload = new S3Upload({
        client, bucket, objectName: name, partSize, concurrency,
        ...(putOptions.size !== undefined ? { size: putOptions.size } : {}),
        ...(putOptions.contentType ? { contentType: putOptions.contentType } : {}),
      });
      // Only backend calls are mapped: an error from `body` (the client went away) is the caller's, not a 503.
      const backend = <T>(step: Promise<T>): Promise<T> => step.catch((error: unknown) => Promise.reject(toStorageError(error, key)));
      try {
        await backend(assertNoKeyConflict(key, name));
        await pipeline(body, counter, async (chunks: AsyncIterable<Buffer>) => {
          for await (const chunk of chunks) await backend(upload.write(chunk));
        });
        // Only reached after the counter ended cleanly: size within limit, checksum as announced.
        await backend(upload.finish());
      } catch (error) {
        await upload.abort();
        throw error;
      }
      return { key, size: counter.bytes, sha256: counter.sha256 };
    },

    async get(key: string, range?: ByteRange): Promise<Readable> {
      const name = objectName(key);
      if (range) checkRangeShape(range);
      try {
        // Not minio's getObject: its node:http stream cost 4x the CPU per byte of this reader (see upstream-body.ts).
        return await getObjectBody({ client, bucket, objectName: name, ...(isWholeObject(range) ? {} : { range }), headTimeoutMs: getHeadTimeoutMs });
      } catch (error) {
        if (codeOf(error) === 'InvalidRange') {
          // MinIO's error names the size (the caller needs it for Content-Range); other servers may not.
          const reported = Number((error as { actualobjectsize?: unknown }).actualobjectsize);
          if (Number.isSafeInteger(reported)) throw new RangeNotSatisfiableError(reported);
          const info = await stat(key);
          if (!info) throw new ObjectNotFoundError(key);
          throw new RangeNotSatisfiableError(info.size);
        }
        throw toStorageError(error, key);
      }
    },

    stat,

    async delete(key: string): Promise<void> {
      const name = objectName(key);
      try {
        await client.removeObject(bucket, name); // S3 answers 204 for a missing key too
        await abortUnfinishedUploads(name);
      } catch (error) {
        throw toStorageError(error, key);
      }
    },

    async deletePrefix(prefix: string): Promise<number> {
      if (prefix === '') throw new InvalidKeyError(prefix, 'refusing to delete every object; pass a prefix');
      let count = 0;
      let batch: string[] = [];
      try {
        for await (const info of list(prefix)) {
          batch.push(namespace + info.key);
          if (batch.length === 1000) { // DeleteObjects' limit per request
            await removeBatch(batch);
            count += batch.length;
            batch = [];
          }
        }
        if (batch.length > 0) await removeBatch(batch);
      } catch (error) {
        throw toStorageError(error, prefix);
      }
      return count + batch.length;
    },

    list,

    async presignedGetUrl(key: string, expiresSeconds: number): Promise<string | undefined> {
      const name = objectName(key);
      if (!Number.isInteger(expiresSeconds) || expiresSeconds < 1 || expiresSeconds > maxPresignSeconds) {
        throw new RangeError(`expiresSeconds must be an integer from 1 to ${maxPresignSeconds}`);
      }
      return client.presignedGetObject(bucket, name, expiresSeconds); // signed locally: no request, no existence check
    },

    async sweepAbandonedUploads(olderThan: Date): Promise<number> {
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
    },

    async check(): Promise<void> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${checkTimeoutMs} ms`)), checkTimeoutMs);
      });
      try {
        const exists = await Promise.race([client.bucketExists(bucket), timeout]);
        if (!exists) throw new Error(`bucket ${bucket} does not exist`);
      } catch (error) {
        throw new StorageUnavailableError(`object storage at ${options.endpoint} is not usable: ${(error as Error).message}`, { cause: error });
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
