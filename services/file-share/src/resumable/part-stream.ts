// One PATCH's bytes streamed into consecutive S3 parts (of about PART_TARGET), each PUT while its bytes arrive.
// Two moments: every byte read (the caller may answer then: s3-parts.ts commits the offset once the parts are
// stored, while the client sends its next chunk), and every part stored. Nothing is buffered beyond what a part's
// body holds before its PUT takes it.
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { ignoreError, type MultipartUploads } from '@boxyard/kit';

/** Bytes a part's body holds before the source is read on (as in the kit's S3 upload). */
const STREAM_BUFFER = 1024 * 1024;
/**
 * A chunk is cut into parts of at least this size (S3's minimum is 5 MiB), the plain upload's part size (the kit's
 * S3 store): each part is a request S3 must finish, and 8 MiB parts made 1 GiB in 16 MiB PATCHes ~10 % slower.
 */
const PART_TARGET = 16 * 1024 * 1024;

/**
 * The sizes a chunk of `size` bytes is cut into: parts of about PART_TARGET (at least `minPart` each), never
 * more than `available` of them (the part numbers the upload still has, whatever follows this chunk).
 */
export function partSizes(size: number, minPart: number, available: number): number[] {
  const count = Math.max(1, Math.min(Math.floor(size / Math.max(PART_TARGET, minPart)), available));
  const base = Math.floor(size / count);
  return Array.from({ length: count }, (_, i) => (i === count - 1 ? size - base * (count - 1) : base));
}

export interface PartTarget {
  multipart: MultipartUploads;
  key: string;
  uploadId: string;
  /** The first part's number; the others follow. */
  first: number;
}

/**
 * Streams `source` into parts of `sizes` bytes, each PUT as its bytes arrive. Resolves once every byte has been read
 * (the source must hold exactly sum(sizes)) with `stored`, which resolves with the parts' ETags once S3 has stored
 * every one. On any failure every part still being sent is stopped and awaited before the error is thrown: nothing
 * of the chunk is recorded (a part sent again later under the same number replaces what S3 kept).
 */
export async function streamParts(target: PartTarget, source: Readable, sizes: readonly number[]): Promise<{ stored: Promise<string[]> }> {
  const sends: Promise<string>[] = [];
  let failure: unknown;
  let body: PassThrough | undefined;
  let remaining = 0;
  const start = () => {
    const index = sends.length;
    if (index >= sizes.length) throw new Error('resumable upload: more bytes than the chunk announced'); // Content-Length bounds the body
    const part = new PassThrough({ highWaterMark: STREAM_BUFFER });
    remaining = sizes[index]!;
    const sending = target.multipart.putPart(target.key, target.uploadId, target.first + index, part, remaining);
    // Seen at once (to stop reading) and again by Promise.all below.
    sending.catch((error: unknown) => {
      failure ??= error;
      part.destroy();
    });
    sends.push(sending);
    return part;
  };
  try {
    for await (const bytes of source as AsyncIterable<Buffer>) {
      let rest = bytes;
      while (rest.length > 0) {
        if (failure !== undefined) throw failure;
        body ??= start();
        const piece = rest.length <= remaining ? rest : rest.subarray(0, remaining);
        rest = rest.subarray(piece.length);
        remaining -= piece.length;
        const more = body.write(piece);
        if (remaining === 0) {
          body.end(); // its PUT ends in the background; the next part starts with the next byte
          body = undefined;
        } else if (!more) {
          await drained(body, sends.at(-1)!);
        }
      }
    }
    if (body || sends.length < sizes.length) throw new Error('resumable upload: the chunk ended before its announced length');
  } catch (error) {
    const cause = failure ?? error; // before the parts stopped below fail too
    body?.destroy();
    await Promise.allSettled(sends);
    throw cause;
  }
  return { stored: storedAll(sends) };
}

/** Every part's ETag, or the first failure once no part is still being sent. */
async function storedAll(sends: readonly Promise<string>[]): Promise<string[]> {
  const settled = await Promise.allSettled(sends);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<string>).value);
}

/** Waits until a part's body takes more, or its PUT has ended (a failure is then seen by the caller). */
async function drained(body: PassThrough, sending: Promise<unknown>): Promise<void> {
  const done = new AbortController();
  try {
    await Promise.race([
      once(body, 'drain', { signal: done.signal }),
      sending.then(() => undefined, ignoreError('a failed send is read where it is awaited; here it only ends the wait')),
    ]);
  } finally {
    done.abort();
  }
}
