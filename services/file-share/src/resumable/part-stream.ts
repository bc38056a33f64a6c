// One PATCH's bytes streamed into several consecutive S3 parts. S3 answers a part only once it has stored all of
// it, some time after its last byte arrived: with the chunk as one part, the PATCH's 204 waited that long for the
// whole chunk, and the client sent nothing meanwhile. Cut into parts that are each PUT while their bytes arrive,
// the earlier parts are stored while the later ones still stream, and only the last (smaller) one's wait shows.
// Nothing is buffered beyond what a part's body holds before its PUT takes it.
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import type { MultipartUploads } from '@boxyard/kit';

/** Bytes a part's body holds before the source is read on (as in the kit's S3 upload). */
const STREAM_BUFFER = 1024 * 1024;
/** A chunk is cut into parts of at least this size (S3's minimum is 5 MiB): more parts, more requests to S3. */
const PART_TARGET = 8 * 1024 * 1024;

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
 * Streams `source` into parts of `sizes` bytes, each PUT as its bytes arrive, and returns their ETags once S3 has
 * stored every one. The source must hold exactly sum(sizes) bytes. On any failure every part still being sent is
 * stopped and awaited before the error is thrown: nothing of the chunk is recorded (a part sent again later under
 * the same number replaces what S3 kept).
 */
export async function sendParts(target: PartTarget, source: Readable, sizes: readonly number[]): Promise<string[]> {
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
    return await Promise.all(sends);
  } catch (error) {
    const cause = failure ?? error; // before the parts stopped below fail too
    body?.destroy();
    await Promise.allSettled(sends);
    throw cause;
  }
}

/** Waits until a part's body takes more, or its PUT has ended (a failure is then seen by the caller). */
async function drained(body: PassThrough, sending: Promise<unknown>): Promise<void> {
  const done = new AbortController();
  try {
    await Promise.race([once(body, 'drain', { signal: done.signal }), sending.then(() => undefined, () => undefined)]);
  } finally {
    done.abort();
  }
}
