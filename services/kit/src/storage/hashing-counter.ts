// A pass-through that counts and hashes the bytes of an upload as they stream by, so neither driver ever holds
// a whole object in memory to learn its size or checksum. It fails the stream the moment the count passes the
// limit (not after reading the rest) or the announced length, and at the end when the sha256 or the length
// isn't the announced one, so a driver that only commits after a clean end never commits a bad body.
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { BodyLengthMismatchError, ChecksumMismatchError, ObjectTooLargeError } from './errors.ts';

export interface HashingCounterOptions {
  maxBytes?: number;
  expectedSha256?: string;
  /** The exact length the body must have. */
  size?: number;
}

export class HashingCounter extends Transform {
  private readonly hash: Hash = createHash('sha256');
  private readonly maxBytes: number;
  private readonly expectedSha256: string | undefined;
  private readonly size: number | undefined;
  private count = 0;
  private digest: string | undefined;

  constructor(options: HashingCounterOptions = {}) {
    super();
    this.maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.expectedSha256 = options.expectedSha256?.toLowerCase();
    this.size = options.size;
  }

  /** Bytes seen so far. */
  get bytes(): number {
    return this.count;
  }

  /** Hex sha256 of the whole body; only available once the stream has ended cleanly. */
  get sha256(): string {
    if (this.digest === undefined) throw new Error('sha256 is only known once the body has ended');
    return this.digest;
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.size !== undefined && this.size > this.maxBytes) {
      callback(new ObjectTooLargeError(this.maxBytes)); // too big by its own account: refused before anything is stored
      return;
    }
    this.count += bytes.length;
    if (this.count > this.maxBytes) {
      callback(new ObjectTooLargeError(this.maxBytes));
      return;
    }
    if (this.size !== undefined && this.count > this.size) {
      callback(new BodyLengthMismatchError(this.size, `more than ${this.size}`));
      return;
    }
    this.hash.update(bytes);
    callback(null, bytes);
  }

  override _flush(callback: TransformCallback): void {
    if (this.size !== undefined && this.count !== this.size) {
      callback(new BodyLengthMismatchError(this.size, String(this.count)));
      return;
    }
    this.digest = this.hash.digest('hex');
    if (this.expectedSha256 !== undefined && this.expectedSha256 !== this.digest) {
      callback(new ChecksumMismatchError(this.expectedSha256, this.digest));
      return;
    }
    callback();
  }
}
