// An S3 multipart upload driven by its caller across requests and processes (the file share's resumable uploads:
// each PATCH becomes a part as its bytes arrive, on whichever replica takes it). The caller keeps the upload id,
// the part numbers and their ETags (in its database) and completes or aborts it. Parts go to presigned part URLs
// as in s3-upload.ts (no second hash, no copy into one buffer); nothing is buffered here.
import type { Readable } from 'node:stream';
import { objectName, toStorageError, type S3Bucket } from './s3-bucket.ts';
import { putPart } from './s3-upload.ts';

export interface MultipartUploads {
  /** S3 refuses parts below this size except the last one. */
  readonly minPartBytes: number;
  /** Starts a multipart upload of `key`; returns its upload id. Nothing is visible until complete(). */
  start(key: string): Promise<string>;
  /** Sends part `part` (1..10,000) of exactly `length` bytes from `body`; returns its ETag. A part sent again replaces the earlier one. */
  putPart(key: string, uploadId: string, part: number, body: Readable, length: number): Promise<string>;
  /** Makes `key` the parts listed, in order; parts not listed are dropped. */
  complete(key: string, uploadId: string, parts: readonly { part: number; etag: string }[]): Promise<void>;
  /** Drops the upload and its parts (an unknown upload id is not an error). */
  abort(key: string, uploadId: string): Promise<void>;
}

export function s3Multipart(target: S3Bucket): MultipartUploads {
  const { client, bucket } = target;
  const mapped = <T>(key: string, step: () => Promise<T>): Promise<T> => step().catch((error: unknown) => Promise.reject(toStorageError(error, key)));
  return {
    minPartBytes: 5 * 1024 * 1024,
    start: (key) => mapped(key, () => client.initiateNewMultipartUpload(bucket, objectName(target, key), { 'Content-Type': 'application/octet-stream' })),
    putPart: (key, uploadId, part, body, length) =>
      mapped(key, () => putPart(client, { bucket, objectName: objectName(target, key), uploadId, part }, body, length)),
    complete: (key, uploadId, parts) =>
      mapped(key, async () => void (await client.completeMultipartUpload(bucket, objectName(target, key), uploadId, [...parts]))),
    abort: (key, uploadId) =>
      mapped(key, async () => {
        try {
          await client.abortMultipartUpload(bucket, objectName(target, key), uploadId);
        } catch (error) {
          if ((error as { code?: string }).code !== 'NoSuchUpload') throw error;
        }
      }),
  };
}
