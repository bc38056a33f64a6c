// What the S3 driver's functions share: the client, the bucket and the store's namespace in it; and S3 / MinIO /
// socket error codes as storage errors.
import type { Client } from 'minio';
import { InvalidKeyError, KeyConflictError, ObjectNotFoundError, StorageError, StorageFullError, StorageUnavailableError } from './errors.ts';
import { validateKey } from './keys.ts';

export interface S3Bucket {
  client: Client;
  bucket: string;
  /** '' or `segments/`: prepended to every key. */
  namespace: string;
}

export const objectName = ({ namespace }: S3Bucket, key: string): string => namespace + validateKey(key);

export const notFoundCodes = new Set(['NoSuchKey', 'NotFound']);
const fullCodes = new Set(['XMinioStorageFull', 'StorageFull', 'XMinioAdminNoSpace', 'InsufficientStorage']);
const conflictCodes = new Set(['XMinioParentIsObject', 'XMinioObjectExistsAsDirectory']);
const invalidKeyCodes = new Set(['KeyTooLongError', 'XMinioInvalidObjectName', 'XMinioInvalidResourceName']);
// InternalError: S3's "please try again" (SeaweedFS answers it to writes until its volume servers have registered
// after a restart); a retry later succeeds, so it is a 503 with Retry-After, not the service's own 500.
const unavailableCodes = new Set([
  'NoSuchBucket',
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'XMinioServerNotInitialized',
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
]);
/** The statuses of an S3 answer without a known code (a part PUT's bare answer, a proxy) that a retry may cure. */
const retryableStatuses = new Set([500, 502, 503, 504]);
const networkErrnos = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  // undici's (part uploads)
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
  // TLS to an https endpoint that cannot be trusted: the operator's to fix, not the caller's, and not a crash
  'EPROTO',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

export const codeOf = (error: unknown): string | undefined => (error as { code?: unknown } | undefined)?.code as string | undefined;

/** S3 / MinIO / socket errors as storage errors; anything unrecognised is passed on as is. */
export function toStorageError(error: unknown, key: string): unknown {
  if (error instanceof StorageError) return error;
  const code = codeOf(error) ?? '';
  if (notFoundCodes.has(code)) return new ObjectNotFoundError(key);
  if (fullCodes.has(code)) return new StorageFullError({ cause: error });
  if (conflictCodes.has(code)) return new KeyConflictError(key, { cause: error });
  if (invalidKeyCodes.has(code) || (error as Error | undefined)?.name === 'InvalidObjectNameError') {
    return new InvalidKeyError(key, (error as Error).message);
  }
  const status = (error as { statusCode?: unknown } | undefined)?.statusCode;
  if (unavailableCodes.has(code) || networkErrnos.has(code) || (typeof status === 'number' && retryableStatuses.has(status))) {
    return new StorageUnavailableError(`object storage unavailable: ${(error as Error).message || code}`, { cause: error });
  }
  return error;
}
