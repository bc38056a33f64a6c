// The S3 driver's put: a multipart upload (s3-upload.ts) fed through the hashing counter, completed only when the
// body ended cleanly, aborted otherwise.
import { pipeline } from 'node:stream/promises';
import { KeyConflictError } from './errors.ts';
import { HashingCounter } from './hashing-counter.ts';
import { notFoundCodes, codeOf, objectName, toStorageError, type S3Bucket } from './s3-bucket.ts';
import { maxParts, S3Upload } from './s3-upload.ts';
import type { PutBody, PutOptions, PutResult } from './types.ts';

/** How a put's parts are cut and sent. */
export interface PartSettings {
  /** Part size when the put's maxBytes does not need larger ones. */
  basePartSize: number;
  /** Parts uploaded at once. */
  concurrency: number;
}

/**
 * MinIO stores both `a` and `a/b` but then hides `a/b` from listings (so deletePrefix would leak it);
 * refuse such keys up front, as the local driver must. Racy against a concurrent put, but cheap:
 * one HEAD per ancestor plus one 1-key listing, in parallel.
 */
async function assertNoKeyConflict({ client, bucket, namespace }: S3Bucket, key: string, name: string): Promise<void> {
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

export async function putObject(target: S3Bucket, parts: PartSettings, key: string, body: PutBody, putOptions: PutOptions): Promise<PutResult> {
  const name = objectName(target, key);
  // Parts must be big enough that the allowed size fits in 10,000 of them; the limit is capped to match.
  const partSize = Math.max(parts.basePartSize, Math.ceil((putOptions.maxBytes ?? 0) / maxParts));
  const maxBytes = Math.min(putOptions.maxBytes ?? Number.POSITIVE_INFINITY, partSize * maxParts);
  const counter = new HashingCounter({
    maxBytes,
    ...(putOptions.expectedSha256 ? { expectedSha256: putOptions.expectedSha256 } : {}),
    ...(putOptions.size !== undefined ? { size: putOptions.size } : {}),
  });
  const upload = new S3Upload({
    client: target.client,
    bucket: target.bucket,
    objectName: name,
    partSize,
    concurrency: parts.concurrency,
    ...(putOptions.size !== undefined ? { size: putOptions.size } : {}),
    ...(putOptions.contentType ? { contentType: putOptions.contentType } : {}),
  });
  // Only backend calls are mapped: an error from `body` (the client went away) is the caller's, not a 503.
  const backend = <T>(step: Promise<T>): Promise<T> => step.catch((error: unknown) => Promise.reject(toStorageError(error, key)));
  try {
    await backend(assertNoKeyConflict(target, key, name));
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
}
