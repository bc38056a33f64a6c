// Streams a body of unknown length into S3 in fixed-size parts, and makes it visible only on `finish()`.
//
// Not minio's `putObject(stream)`: without a size it picks ~530 MiB parts (5 TiB / 10,000) and buffers each
// whole part in memory, silently resumes any earlier incomplete upload of the same key (so two uploads of one
// key mix their parts), never aborts a failed upload, and hangs when the source stream errors (it `pipe`s,
// which doesn't forward errors). Driving the multipart API ourselves gives: bounded memory (at most
// `concurrency + 1` parts), a part or two in flight while the next is read, a commit that happens only after
// the caller has verified size and checksum, and an abort that removes everything on failure.
//
// Parts are PUT with undici to a presigned part URL (signed locally), not with minio's uploadPart: over plain HTTP
// that hashes every part with SHA-256 for its signature (a second hash of every byte on the main thread, the caller
// already computes one) and needs the part copied into one buffer; a presigned URL carries UNSIGNED-PAYLOAD and the
// part goes out as the chunks it arrived in.
import type { Client } from 'minio';
import { Readable } from 'node:stream';
import { request } from 'undici';

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
}

export class S3Upload {
  private readonly options: S3UploadOptions;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private uploadId: string | undefined;
  private nextPartNumber = 1;
  private readonly parts: { part: number; etag: string }[] = [];
  private readonly inflight = new Set<Promise<void>>();
  private failure: unknown;

  constructor(options: S3UploadOptions) {
    this.options = options;
  }

  private get metaData(): Record<string, string> {
    return this.options.contentType ? { 'Content-Type': this.options.contentType } : {};
  }

  /** Buffers a chunk; sends a part once a part's worth is buffered (waits when too many are in flight). */
  async write(chunk: Buffer): Promise<void> {
    if (this.failure !== undefined) throw this.failure; // stop reading as soon as a part failed
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    if (this.bufferedBytes >= this.options.partSize) await this.sendPart(this.takeChunks());
  }

  /** Commits the object: one plain PUT if it never filled a part (atomic, nothing sent before), else completes the multipart upload. */
  async finish(): Promise<void> {
    const { client, bucket, objectName } = this.options;
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
    await Promise.allSettled(this.inflight);
    if (this.uploadId === undefined) return;
    const { client, bucket, objectName } = this.options;
    const uploadId = this.uploadId;
    this.uploadId = undefined;
    // If this fails too (backend gone), the parts stay invisible; a bucket lifecycle rule
    // (AbortIncompleteMultipartUpload) reclaims them.
    await client.abortMultipartUpload(bucket, objectName, uploadId).catch(() => {});
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
    const { client, bucket, objectName } = this.options;
    this.uploadId ??= await client.initiateNewMultipartUpload(bucket, objectName, this.metaData);
    const uploadId = this.uploadId;
    const part = this.nextPartNumber++;
    if (part > maxParts) throw new Error(`more than ${maxParts} parts`); // callers cap the size below this
    const sending: Promise<void> = putPart(client, { bucket, objectName, uploadId, part }, body)
      .then((etag) => {
        this.parts.push({ part, etag });
      })
      .catch((error: unknown) => {
        this.failure ??= error;
      })
      .finally(() => this.inflight.delete(sending));
    this.inflight.add(sending);
    if (this.inflight.size >= this.options.concurrency) await Promise.race(this.inflight);
    if (this.failure !== undefined) throw this.failure;
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

/** PUTs one part to a presigned part URL; returns its ETag. */
async function putPart(client: Client, target: { bucket: string; objectName: string; uploadId: string; part: number }, body: { chunks: Buffer[]; bytes: number }): Promise<string> {
  const url = await client.presignedUrl('PUT', target.bucket, target.objectName, 15 * 60, { partNumber: String(target.part), uploadId: target.uploadId });
  const response = await request(url, { method: 'PUT', body: Readable.from(body.chunks), headers: { 'content-length': String(body.bytes) } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new S3ResponseError(response.statusCode, text);
  const etag = response.headers.etag;
  if (typeof etag !== 'string') throw new S3ResponseError(response.statusCode, '<Code>MissingETag</Code><Message>S3 answered a part without an ETag</Message>');
  return etag.replace(/^"|"$/g, '');
}
