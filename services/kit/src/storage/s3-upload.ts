// Streams a body into S3 in parts, and makes it visible only on `finish()`.
//
// Not minio's `putObject(stream)`: without a size it picks ~530 MiB parts (5 TiB / 10,000) and buffers each
// whole part in memory, silently resumes any earlier incomplete upload of the same key (so two uploads of one
// key mix their parts), never aborts a failed upload, and hangs when the source stream errors (it `pipe`s,
// which doesn't forward errors). Driving the multipart API ourselves gives: bounded memory, a commit that
// happens only after the caller has verified size and checksum, and an abort that removes everything on failure.
//
// Two ways to fill the parts:
// - the body's length is known (`size`, e.g. a request's Content-Length): every part's length is known up front,
//   so each part is PUT while its bytes arrive, chunk by chunk, holding at most STREAM_BUFFER beyond what the
//   sockets hold (buffered, an upload holds up to (concurrency + 1) x 16 MiB of 64 KiB chunks);
// - unknown length: a part is buffered until full (at most `concurrency + 1` parts), then sent while the next fills.
//
// Parts are PUT with undici to a presigned part URL (signed locally), not with minio's uploadPart: over plain HTTP
// that hashes every part with SHA-256 for its signature (a second hash of every byte on the main thread, the caller
// already computes one) and needs the part copied into one buffer; a presigned URL carries UNSIGNED-PAYLOAD and the
// part goes out as the chunks it arrived in.
import type { Client } from 'minio';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import { request } from 'undici';
import { ignoreError } from '../errors/ignore-error.ts';

export const maxParts = 10_000; // S3's limit per multipart upload

export interface S3UploadOptions {
  client: Client;
  bucket: string;
  objectName: string;
  /** At least 5 MiB (S3's minimum for all parts but the last). */
  partSize: number;
  /** Parts uploaded at once while the next one fills. */
  concurrency: number;
  contentType?: string;
  /** The body's exact length, when known before it arrives: parts are then streamed, not buffered. */
  size?: number;
}

/** A part being streamed: its body, the bytes it still takes, and its PUT. */
interface StreamedPart {
  body: PassThrough;
  remaining: number;
  sending: Promise<void>;
}

/** Bytes a streamed part's body holds before `write` waits for the PUT to take them. */
const STREAM_BUFFER = 1024 * 1024;

export class S3Upload {
  private readonly options: S3UploadOptions;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private uploadId: string | undefined;
  private nextPartNumber = 1;
  private readonly parts: { part: number; etag: string }[] = [];
  private readonly inflight = new Set<Promise<void>>();
  private failure: unknown;
  private streamedBytes = 0;
  private streamedPart: StreamedPart | undefined;

  constructor(options: S3UploadOptions) {
    this.options = options;
  }

  private get metaData(): Record<string, string> {
    return this.options.contentType ? { 'Content-Type': this.options.contentType } : {};
  }

  /** Streams a chunk into its part(s), or buffers it and sends a part once full (waits when too many are in flight). */
  async write(chunk: Buffer): Promise<void> {
    if (this.failure !== undefined) throw this.failure; // stop reading as soon as a part failed
    if (this.streaming) return this.stream(chunk);
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    if (this.bufferedBytes >= this.options.partSize) await this.sendPart(this.takeChunks());
  }

  /** Commits the object: one plain PUT if it never filled a part (atomic, nothing sent before), else completes the multipart upload. */
  async finish(): Promise<void> {
    const { client, bucket, objectName } = this.options;
    if (this.streaming && this.streamedBytes !== this.options.size)
      throw new Error(`streamed ${this.streamedBytes} of the ${this.options.size} bytes announced`); // callers check the length first
    if (this.uploadId === undefined) {
      const body = this.takeBuffered();
      await client.putObject(bucket, objectName, body, body.length, this.metaData);
      return;
    }
    if (this.bufferedBytes > 0) await this.sendPart(this.takeChunks());
    await Promise.all(this.inflight);
    if (this.failure !== undefined) throw this.failure;
    const parts = [...this.parts].sort((a, b) => a.part - b.part);
    await client.completeMultipartUpload(bucket, objectName, this.uploadId, parts);
    this.uploadId = undefined; // committed: nothing left to abort
  }

  /** Drops the upload: waits for parts in flight, then aborts so no part lingers. Never throws. */
  async abort(): Promise<void> {
    this.buffered = [];
    this.streamedPart?.body.destroy(); // its PUT fails (premature close); no 'error' to catch before undici listens
    this.streamedPart = undefined;
    await Promise.allSettled(this.inflight);
    if (this.uploadId === undefined) return;
    const { client, bucket, objectName } = this.options;
    const uploadId = this.uploadId;
    this.uploadId = undefined;
    // If this fails too (backend gone), the parts stay invisible; a bucket lifecycle rule
    // (AbortIncompleteMultipartUpload) reclaims them.
    await client
      .abortMultipartUpload(bucket, objectName, uploadId)
      .catch(ignoreError('the sweep of unfinished multipart uploads removes what this abort could not'));
  }

  /** Bodies shorter than a part take the one plain PUT of `finish()`, as bodies of unknown length do. */
  private get streaming(): boolean {
    return this.options.size !== undefined && this.options.size >= this.options.partSize;
  }

  private async stream(chunk: Buffer): Promise<void> {
    const size = this.options.size!;
    let rest = chunk;
    while (rest.length > 0) {
      if (this.streamedBytes + rest.length > size) throw new Error(`more than the ${size} bytes announced`); // callers check the length first
      const part = (this.streamedPart ??= await this.startStreamedPart(Math.min(this.options.partSize, size - this.streamedBytes)));
      const piece = rest.length <= part.remaining ? rest : rest.subarray(0, part.remaining);
      rest = rest.subarray(piece.length);
      part.remaining -= piece.length;
      this.streamedBytes += piece.length;
      const more = part.body.write(piece);
      if (part.remaining === 0) {
        part.body.end(); // its PUT completes in the background; the next part starts with the next byte
        this.streamedPart = undefined;
      } else if (!more) {
        await drained(part);
      }
      if (this.failure !== undefined) throw this.failure;
    }
  }

  private async startStreamedPart(length: number): Promise<StreamedPart> {
    const body = new PassThrough({ highWaterMark: STREAM_BUFFER });
    const { sending } = await this.startPart(body, length, () => body.destroy());
    return { body, remaining: length, sending };
  }

  private takeBuffered(): Buffer {
    const { chunks, bytes } = this.takeChunks();
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
  }

  private takeChunks(): { chunks: Buffer[]; bytes: number } {
    const taken = { chunks: this.buffered, bytes: this.bufferedBytes };
    this.buffered = [];
    this.bufferedBytes = 0;
    return taken;
  }

  private async sendPart(body: { chunks: Buffer[]; bytes: number }): Promise<void> {
    await this.startPart(Readable.from(body.chunks), body.bytes);
    if (this.inflight.size >= this.options.concurrency) await Promise.race(this.inflight);
    if (this.failure !== undefined) throw this.failure;
  }

  /** Starts the PUT of the next part (the first starts the multipart upload); `sending` settles when it has ended. */
  private async startPart(body: Readable, length: number, onFailure?: () => void): Promise<{ sending: Promise<void> }> {
    const { client, bucket, objectName } = this.options;
    this.uploadId ??= await client.initiateNewMultipartUpload(bucket, objectName, this.metaData);
    const uploadId = this.uploadId;
    const part = this.nextPartNumber++;
    if (part > maxParts) throw new Error(`more than ${maxParts} parts`); // callers cap the size below this
    const sending: Promise<void> = putPart(client, { bucket, objectName, uploadId, part }, body, length)
      .then((etag) => {
        this.parts.push({ part, etag });
      })
      .catch((error: unknown) => {
        this.failure ??= error;
        onFailure?.();
      })
      .finally(() => this.inflight.delete(sending));
    this.inflight.add(sending);
    return { sending };
  }
}

/** Waits until a streamed part's body takes more, or its PUT has ended (failed: the caller checks). */
async function drained(part: StreamedPart): Promise<void> {
  const done = new AbortController();
  try {
    await Promise.race([once(part.body, 'drain', { signal: done.signal }), part.sending]);
  } finally {
    done.abort();
  }
}

/** An S3 error answer as minio's errors look (`code`, message), so the store maps both alike. */
export class S3ResponseError extends Error {
  readonly code: string;
  readonly statusCode: number;
  constructor(statusCode: number, body: string) {
    const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(body)?.[1];
    super(field('Message') ?? `S3 answered ${statusCode}`);
    this.name = 'S3Error';
    this.code = field('Code') ?? `HTTP${statusCode}`;
    this.statusCode = statusCode;
  }
}

/** PUTs one part of `length` bytes to a presigned part URL; returns its ETag. */
export async function putPart(
  client: Client,
  target: { bucket: string; objectName: string; uploadId: string; part: number },
  body: Readable,
  length: number,
): Promise<string> {
  const url = await client.presignedUrl('PUT', target.bucket, target.objectName, 15 * 60, { partNumber: String(target.part), uploadId: target.uploadId });
  const response = await request(url, { method: 'PUT', body, headers: { 'content-length': String(length) } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new S3ResponseError(response.statusCode, text);
  const etag = response.headers.etag;
  if (typeof etag !== 'string') throw new S3ResponseError(response.statusCode, '<Code>MissingETag</Code><Message>S3 answered a part without an ETag</Message>');
  return etag.replace(/^"|"$/g, '');
}
