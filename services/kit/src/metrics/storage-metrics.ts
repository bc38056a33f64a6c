// What a service moves through its object store, as Prometheus counters: bytes uploaded (stored) and downloaded
// (read back out), uploads that failed and why, and storage failures that are the store's fault rather than the
// caller's. Wraps any ObjectStore driver, so local and S3 report the same series. Inside a trace, each storage
// call is a CLIENT span too (S3 calls named as the AWS conventions name them: `S3.PutObject`).
import type { Span } from '@opentelemetry/api';
import type { Readable } from 'node:stream';
import { Counter, type Registry } from '@prometheus-io/client';
import {
  BodyLengthMismatchError,
  ChecksumMismatchError,
  KeyConflictError,
  ObjectNotFoundError,
  ObjectTooLargeError,
  RangeNotSatisfiableError,
  InvalidKeyError,
  StorageError,
  StorageFullError,
} from '../storage/errors.ts';
import type { ObjectStore } from '../storage/types.ts';
import { inClientSpan } from '../telemetry/client-span.ts';

export type UploadFailureReason = 'too_large' | 'checksum_mismatch' | 'conflict' | 'invalid_key' | 'storage_full' | 'client_aborted' | 'storage_error';

/** Why a put failed, as a label: the caller's mistakes apart from the store's faults. */
export function uploadFailureReason(error: unknown): UploadFailureReason {
  if (error instanceof ObjectTooLargeError) return 'too_large';
  if (error instanceof ChecksumMismatchError) return 'checksum_mismatch';
  if (error instanceof BodyLengthMismatchError) return 'client_aborted'; // fewer (or more) bytes than it announced
  if (error instanceof KeyConflictError) return 'conflict';
  if (error instanceof InvalidKeyError) return 'invalid_key';
  if (error instanceof StorageFullError) return 'storage_full';
  // Errors of the body itself come back unchanged (a client that hung up, a request stream that failed).
  if (!(error instanceof StorageError)) return isBodyError(error) ? 'client_aborted' : 'storage_error';
  return 'storage_error';
}

const BODY_ERROR_CODES = new Set(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE', 'ECONNABORTED', 'EPIPE', 'ABORT_ERR', 'FST_REQ_FILE_TOO_LARGE']);
function isBodyError(error: unknown): boolean {
  const e = error as { code?: string; name?: string } | undefined;
  return !!e && (BODY_ERROR_CODES.has(e.code ?? '') || e.name === 'AbortError');
}

/** Failures that say nothing about the store's health: they are the caller's (missing key, bad range...). */
const callerError = (error: unknown) =>
  error instanceof ObjectNotFoundError ||
  error instanceof RangeNotSatisfiableError ||
  error instanceof InvalidKeyError ||
  error instanceof ObjectTooLargeError ||
  error instanceof ChecksumMismatchError ||
  error instanceof KeyConflictError ||
  isBodyError(error);

export interface StorageMetrics {
  uploadedBytes: Counter;
  downloadedBytes: Counter;
  uploadFailures: Counter<'reason'>;
  errors: Counter<'operation'>;
}

const UPLOAD_FAILURE_REASONS: UploadFailureReason[] = [
  'too_large',
  'checksum_mismatch',
  'conflict',
  'invalid_key',
  'storage_full',
  'client_aborted',
  'storage_error',
];
const OPERATIONS = ['put', 'get', 'stat', 'delete', 'presign'];

export function createStorageMetrics(registry: Registry): StorageMetrics {
  const registers = [registry];
  const metrics: StorageMetrics = {
    uploadedBytes: new Counter({ name: 'boxyard_upload_bytes_total', help: 'Bytes stored by uploads that succeeded.', registers }),
    downloadedBytes: new Counter({ name: 'boxyard_download_bytes_total', help: 'Bytes read from storage and sent to clients.', registers }),
    uploadFailures: new Counter({ name: 'boxyard_upload_failures_total', help: 'Uploads that stored nothing, by reason.', labelNames: ['reason'], registers }),
    errors: new Counter({
      name: 'boxyard_storage_errors_total',
      help: 'Storage operations that failed through no fault of the caller, by operation.',
      labelNames: ['operation'],
      registers,
    }),
  };
  // Every series exists from the start at zero, so rates and alerts see the first failure.
  for (const reason of UPLOAD_FAILURE_REASONS) metrics.uploadFailures.inc({ reason }, 0);
  for (const operation of OPERATIONS) metrics.errors.inc({ operation }, 0);
  return metrics;
}

const S3_METHODS: Record<string, string> = { put: 'PutObject', get: 'GetObject', stat: 'HeadObject', delete: 'DeleteObject', presign: 'PresignGetObject' };

/** Runs `run` in a CLIENT span when there is a trace to join; `run` gets the span (or undefined) to annotate. */
function inSpan<T>(driver: ObjectStore['driver'], operation: string, key: string, bucket: string | undefined, run: (span?: Span) => Promise<T>): Promise<T> {
  const s3 = driver === 's3';
  const attributes = s3
    ? {
        'rpc.system': 'aws-api',
        'rpc.service': 'S3',
        'rpc.method': S3_METHODS[operation] ?? operation,
        'aws.s3.key': key,
        ...(bucket ? { 'aws.s3.bucket': bucket } : {}),
      }
    : { 'boxyard.storage.driver': driver, 'boxyard.storage.operation': operation, 'boxyard.storage.key': key };
  return inClientSpan('@boxyard/kit/storage', s3 ? `S3.${S3_METHODS[operation] ?? operation}` : `storage ${operation}`, attributes, run);
}

/** The same store, counting what goes through it into `registry` (and tracing its calls). */
/** Parts of caller-driven multipart uploads count as stored bytes once S3 has taken them. */
function countParts(multipart: NonNullable<ObjectStore['multipart']>, metrics: StorageMetrics): NonNullable<ObjectStore['multipart']> {
  return {
    ...multipart,
    async putPart(key, uploadId, part, body, length) {
      const etag = await multipart.putPart(key, uploadId, part, body, length);
      metrics.uploadedBytes.inc(length);
      return etag;
    },
  };
}

export function instrumentStore(store: ObjectStore, registry: Registry, options: { bucket?: string } = {}): ObjectStore {
  const metrics = createStorageMetrics(registry);
  const observe = async <T>(operation: string, key: string, run: () => Promise<T>): Promise<T> =>
    inSpan(store.driver, operation, key, options.bucket, async () => {
      try {
        return await run();
      } catch (error) {
        if (!callerError(error)) metrics.errors.inc({ operation });
        throw error;
      }
    });
  return {
    driver: store.driver,
    ...(store.multipart ? { multipart: countParts(store.multipart, metrics) } : {}),
    put: (key, body, putOptions) =>
      inSpan(store.driver, 'put', key, options.bucket, async (span) => {
        try {
          const result = await store.put(key, body, putOptions);
          metrics.uploadedBytes.inc(result.size);
          span?.setAttribute('boxyard.storage.bytes', result.size);
          return result;
        } catch (error) {
          const reason = uploadFailureReason(error);
          metrics.uploadFailures.inc({ reason });
          if (reason === 'storage_error' || reason === 'storage_full') metrics.errors.inc({ operation: 'put' });
          throw error;
        }
      }),
    async get(key, range) {
      const stream = await observe('get', key, () => store.get(key, range));
      return countBytes(stream, metrics);
    },
    stat: (key) => observe('stat', key, () => store.stat(key)),
    delete: (key) => observe('delete', key, () => store.delete(key)),
    deletePrefix: (prefix) => observe('delete', prefix, () => store.deletePrefix(prefix)),
    list: (prefix) => store.list(prefix),
    presignedGetUrl: (key, expires) => observe('presign', key, () => store.presignedGetUrl(key, expires)),
    presignedPutUrl: (key, expires) => observe('presign', key, () => store.presignedPutUrl(key, expires)),
    // Readiness failures are reported by /health/ready; counting them here would double every probe's failure.
    check: () => store.check(),
    sweepAbandonedUploads: (olderThan) => store.sweepAbandonedUploads(olderThan),
  };
}

/**
 * Counts the bytes the stream reads from storage (once, when it ends or is dropped): from its own `bytesRead` when it
 * keeps one (the local store's FileBody, which HTTP downloads drain without `push`), else by wrapping its `push`, not
 * by piping it through a Transform: downloads of many GiB then pay no extra stream hop, buffer or callback per chunk.
 */
function countBytes(source: Readable, metrics: StorageMetrics): Readable {
  let pushed = 0;
  const keepsOwnCount = typeof (source as { bytesRead?: unknown }).bytesRead === 'number';
  if (!keepsOwnCount) {
    const push = source.push;
    source.push = function countedPush(this: Readable, chunk: unknown, encoding?: BufferEncoding) {
      if (chunk !== null && chunk !== undefined) pushed += (chunk as { length: number }).length;
      return push.call(this, chunk, encoding);
    };
  }
  const bytes = () => (keepsOwnCount ? (source as unknown as { bytesRead: number }).bytesRead : pushed);
  let counted = false;
  const settle = () => {
    if (counted) return;
    counted = true;
    metrics.downloadedBytes.inc(bytes());
  };
  source.once('end', settle);
  source.once('close', settle);
  source.once('error', (error) => {
    if (!callerError(error)) metrics.errors.inc({ operation: 'get' });
  });
  return source;
}
