// The one object-storage interface the services use for box files and shared files. Two drivers implement it:
// `s3` (MinIO or any S3 API) and `local` (a directory). Keys are opaque `/`-separated names; both drivers
// accept the same keys (see keys.ts), so a service can move between drivers without renaming anything.
import type { Readable } from 'node:stream';
import type { MultipartUploads } from './s3-multipart.ts';

export interface PutOptions {
  /** Fails with ObjectTooLargeError as soon as the body passes this many bytes; nothing is stored. */
  maxBytes?: number;
  contentType?: string;
  /** Lower-case hex sha256 the body must have; ChecksumMismatchError otherwise, and nothing is stored. */
  expectedSha256?: string;
  /** The body's exact length when known before it arrives (a request's Content-Length); another length fails the put. */
  size?: number;
}

export interface PutResult {
  key: string;
  size: number;
  /** Lower-case hex sha256 of the stored bytes, computed while streaming. */
  sha256: string;
}

export interface ObjectInfo {
  key: string;
  size: number;
  lastModified: Date;
  /** Opaque, unquoted validator for conditional requests; changes when the object is replaced. */
  etag: string;
  /** Only the s3 driver keeps a content type; the local driver leaves it undefined. */
  contentType?: string;
}

/**
 * Inclusive byte range, as in HTTP `Range: bytes=start-end`. Without `end` it runs to the end of the object;
 * an `end` past the object is clamped. A `start` at or past the size fails with RangeNotSatisfiableError
 * (except `{ start: 0 }` alone, which is simply the whole object, even an empty one).
 */
export interface ByteRange {
  start: number;
  end?: number;
}

export type PutBody = AsyncIterable<Uint8Array> | NodeJS.ReadableStream;

export interface ObjectStore {
  readonly driver: 's3' | 'local';
  /**
   * Streams a body of unknown length in; the object appears whole, or not at all, and replaces an existing key
   * atomically. Errors of `body` itself (a client disconnect) come back unchanged; a body refused before it
   * was read (invalid key, KeyConflictError on s3) is left for the caller to discard.
   */
  put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult>;
  /** Throws ObjectNotFoundError, or RangeNotSatisfiableError for a range starting past the end. */
  get(key: string, range?: ByteRange): Promise<Readable>;
  stat(key: string): Promise<ObjectInfo | undefined>;
  /** Deleting a missing key is not an error. */
  delete(key: string): Promise<void>;
  /** Deletes every key starting with `prefix` (a non-empty string prefix, not only whole segments); returns how many. */
  deletePrefix(prefix: string): Promise<number>;
  /** Every key starting with `prefix` (recursively), in byte order of the keys. */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** A URL a client can GET without credentials; undefined when the driver can't make one (local). */
  presignedGetUrl(key: string, expiresSeconds: number): Promise<string | undefined>;
  /**
   * A URL a client can PUT the object's bytes to without credentials (one request, any length the object store
   * takes), valid for starting a request within `expiresSeconds`; undefined when the driver can't make one (local).
   */
  presignedPutUrl(key: string, expiresSeconds: number): Promise<string | undefined>;
  /** Readiness: resolves when the bucket / directory is reachable and usable, throws StorageUnavailableError otherwise. */
  check(): Promise<void>;
  /**
   * Removes what puts cut short by a crash left behind, never a finished object: temporary files not written to
   * since `olderThan` (local), incomplete multipart uploads under the store's prefix started before `olderThan`
   * (s3). Returns how many went. A put still running is younger than any sensible `olderThan` (local: its file is
   * written to all the time; s3: choose a grace longer than the longest upload).
   */
  sweepAbandonedUploads(olderThan: Date): Promise<number>;
  /** s3 only: multipart uploads driven by the caller across requests (s3-multipart.ts). */
  readonly multipart?: MultipartUploads;
}
