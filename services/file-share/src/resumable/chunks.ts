// Chunks of a resumable upload stored as objects of their own, `uploads/<id>/<uuid>`, through the store's ordinary
// atomic put: durable and whole or absent, on any driver, readable by any replica. The local driver keeps every
// chunk this way and joins them into the file's object at the end (one streamed put, which also yields the
// sha256); the s3 driver only stages chunks below S3's 5 MiB part minimum this way (s3-parts.ts). A chunk that
// breaks off is dropped whole (the client sends it again from the offset HEAD answers: tus clients do); a chunk
// whose Upload-Checksum does not match is dropped and answered 460.
import { createHash, randomUUID } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { HttpError, StorageError, type ObjectStore } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import type { ChecksumHeader } from './tus-headers.ts';
import type { Segment } from './upload-rows.ts';

export interface ChunkDeps {
  pool: DatabasePool;
  store: ObjectStore;
  /** Removes bytes that did not become part of anything (once nothing refers to them). */
  discard(key: string): Promise<void>;
}

/** Tus's status for a chunk whose Upload-Checksum does not match. */
export const checksumMismatch = () => new HttpError(460, 'Checksum mismatch: the chunk was dropped, the offset is unchanged');

/** Passes bytes through while hashing them (the Upload-Checksum of a sha1 chunk; sha256 is the store's own). */
function hashing(algorithm: string) {
  const hash = createHash(algorithm);
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return { stream, digest: () => hash.digest('hex') };
}

/**
 * Stores one chunk of at most `maxBytes` bytes (exactly `size` when the request declared it). Returns its key and
 * length; throws 460 on a checksum mismatch, 413 past `maxBytes`; nothing is left behind on any failure.
 */
export async function storeChunk(
  deps: ChunkDeps,
  uploadId: string,
  body: Readable,
  options: { size?: number | undefined; maxBytes: number; checksum?: ChecksumHeader | undefined },
): Promise<{ storageKey: string; length: number }> {
  const storageKey = `uploads/${uploadId}/${randomUUID()}`;
  // Registered first: if this process dies mid-way, the sweep removes whatever was stored.
  await deps.pool.query(sql.unsafe`insert into object_garbage (storage_key, delete_after) values (${storageKey}, now() + interval '1 day')`);
  const sha1 = options.checksum?.algorithm === 'sha1' ? hashing('sha1') : undefined;
  const source = sha1 ? body.pipe(sha1.stream) : body;
  if (sha1) body.once('error', (error) => sha1.stream.destroy(error));
  try {
    const result = await deps.store.put(storageKey, source, {
      maxBytes: options.maxBytes,
      contentType: 'application/octet-stream',
      ...(options.size !== undefined ? { size: options.size } : {}),
      ...(options.checksum?.algorithm === 'sha256' ? { expectedSha256: options.checksum.hex } : {}),
    });
    if (sha1 && sha1.digest() !== options.checksum!.hex) throw checksumMismatch();
    return { storageKey, length: result.size };
  } catch (error) {
    await deps.discard(storageKey);
    if (error instanceof StorageError && error.code === 'CHECKSUM_MISMATCH') throw checksumMismatch();
    if (error instanceof StorageError && error.statusCode === 413)
      throw new HttpError(413, `The chunk goes past the upload's length (${options.maxBytes} bytes were left)`);
    throw error;
  }
}

/** Consecutive chunks' bytes in order, read chunk after chunk from the store (one chunk open at a time). */
export function joinSegments(store: ObjectStore, segments: readonly Segment[]): Readable {
  async function* bytes(): AsyncGenerator<Buffer> {
    let expected = segments[0]?.offset ?? 0;
    for (const segment of segments) {
      if (segment.offset !== expected) throw new Error(`resumable upload: a gap at byte ${expected}`); // guarded by the offsets' primary key and append()
      if (segment.storageKey === null) throw new Error('resumable upload: a part cannot be read back'); // only staged chunks are joined
      for await (const chunk of await store.get(segment.storageKey)) yield chunk as Buffer;
      expected += segment.length;
    }
  }
  return Readable.from(bytes(), { objectMode: false });
}
