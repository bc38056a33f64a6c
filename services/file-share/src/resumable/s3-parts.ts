// The s3 driver's resumable uploads: the upload is one S3 multipart upload of its final `files/<uuid>` key,
// started at creation. A PATCH whose length is known and at least S3's 5 MiB part minimum (or that ends the
// upload) streams straight into the next part as its bytes arrive: nothing is buffered in memory or on local disk,
// and the bytes are written once. A smaller PATCH (S3 would refuse it as a part unless it is the last one) is
// staged as an object of its own (chunks.ts) — durable, readable by any replica — and once the staged run reaches
// 5 MiB, or the upload's last byte arrives, the run is streamed from storage into one part and its objects go.
// A part that fails (the body broke off, a checksum mismatch) is never recorded: the next PATCH sends the same
// part number, which replaces it. Completion lists the recorded parts; the file's sha256 comes from the running
// hash (running-hash.ts) or, when another replica took some chunk, from reading the object once.
import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { conflict, HttpError, ignoreError, markHandled, type MultipartUploads, type ObjectStore } from '@boxyard/kit';
import type { storeChunk } from './chunks.ts';
import { checksumMismatch, joinSegments } from './chunks.ts';
import { partSizes, streamParts } from './part-stream.ts';
import type { ChunkHasher, RunningHashes } from './running-hash.ts';
import type { ChecksumHeader } from './tus-headers.ts';
import type { LeasedRow, Segment, UploadRow, UploadRows } from './upload-rows.ts';

const MAX_PARTS = 10_000;

export interface PartDeps {
  store: ObjectStore;
  multipart: MultipartUploads;
  rows: UploadRows;
  hashes: RunningHashes;
  storeChunk: (uploadId: string, body: Readable, options: Parameters<typeof storeChunk>[3]) => ReturnType<typeof storeChunk>;
}

export interface PartChunk {
  body: Readable;
  size: number | undefined;
  checksum?: ChecksumHeader | undefined;
}

/** How a chunk that took the lease over from the one before (handoff.ts) commits after it. */
export interface Succession {
  /** The commit of the chunk answered before this one: this chunk's commit waits for it, and fails with it. */
  after?: Promise<unknown>;
  /** Asked right before this chunk's commit statement: whether a next chunk took the lease over (it stays held). */
  handedOn?: () => boolean;
}

/** Waits for the commit this chunk follows; its failure is this chunk's (the offset stays before both). */
async function follow(after: Promise<unknown> | undefined): Promise<void> {
  if (!after) return;
  try {
    await after;
  } catch {
    throw conflict('The chunk before this one was not stored; resume from the offset HEAD gives');
  }
}

/** Passes bytes through to the running hash and the chunk's own checksum. */
function tap(body: Readable, hasher: ChunkHasher, checksum: ReturnType<typeof createHash> | undefined): Readable {
  const through = new Transform({
    transform(bytes: Buffer, _encoding, done) {
      hasher.update(bytes);
      checksum?.update(bytes);
      done(null, bytes);
    },
  });
  body.once('error', (error) => through.destroy(error));
  return body.pipe(through);
}

const interrupted = () => new HttpError(400, 'The chunk was interrupted before it ended; nothing of it was kept');

/**
 * What a chunk's append leaves: the upload afterwards and, for a chunk answered before its parts were stored,
 * `committed`, which settles once they are stored and the offset committed under the same lease (released then).
 */
export interface Appended {
  row: UploadRow;
  committed?: Promise<UploadRow>;
  /** With `committed`: the upload as the next chunk finds it once this one commits (handoff.ts). */
  next?: LeasedRow;
}

/**
 * Appends one chunk at `offset` (the caller holds the lease). A chunk of parts that does not end the upload is
 * done once its bytes have arrived (and its checksum matched): its parts are stored and its offset committed in
 * `committed`, while the client sends the next chunk. The next PATCH takes the lease over on this replica
 * (handoff.ts: its commit follows this one, `succession`) or waits for that commit on another (upload-rows.ts lease);
 * until it lands, HEAD answers the previous offset, and if it fails the upload stays there (the next PATCH gets
 * 409 with it), so the offset in PostgreSQL only ever names stored bytes.
 */
export async function appendPart(
  deps: PartDeps,
  row: LeasedRow,
  token: string,
  offset: number,
  chunk: PartChunk,
  succession: Succession = {},
): Promise<Appended> {
  // The lease told where the parts stand: the segments themselves are read only when staged chunks wait.
  const segments = row.staged > 0 ? await deps.rows.segments(row.id) : [];
  const staged = segments.filter((segment) => segment.part === null);
  const part = row.last_part + 1;
  if (part > MAX_PARTS) throw new HttpError(413, `An upload takes at most ${MAX_PARTS} chunks of at least 5 MiB`);
  const hasher = deps.hashes.forChunk(row);
  const size = chunk.size;
  if (size !== undefined && size > 0 && staged.length === 0 && (size >= deps.multipart.minPartBytes || offset + size === row.length)) {
    // Part numbers kept for what follows: each later part but the last holds at least the minimum.
    const later = Math.ceil((row.length - offset - size) / deps.multipart.minPartBytes) + 1;
    const sizes = partSizes(size, deps.multipart.minPartBytes, MAX_PARTS - part + 1 - later);
    const check = chunk.checksum ? createHash(chunk.checksum.algorithm) : undefined;
    let bodyFailed = false;
    chunk.body.once('error', () => (bodyFailed = true));
    const target = { multipart: deps.multipart, key: row.storage_key!, uploadId: row.multipart_id!, first: part };
    const { stored } = await streamParts(target, tap(chunk.body, hasher, check), sizes).catch((error: unknown) => {
      throw bodyFailed || chunk.body.destroyed ? interrupted() : error;
    });
    if (check && check.digest('hex') !== chunk.checksum!.hex) {
      await stored.catch(ignoreError('refused anyway: its parts are replaced by the next ones sent'));
      throw checksumMismatch();
    }
    // The running hash moves to the chunk's end now: a next chunk on this replica may be leased as soon as the
    // offset commits. Should the commit fail, the row's offset no longer matches it and the file is hashed at the end.
    hasher.commit(offset + size);
    let at = offset;
    const commit = async () => {
      const etags = await stored;
      await follow(succession.after);
      const parts = sizes.map((length, i) => ({ offset: (at += length) - length, length, storageKey: null, part: part + i, etag: etags[i]! }));
      return deps.rows.append(row.id, token, parts, hasher.token, !succession.handedOn?.());
    };
    if (offset + size === row.length) return { row: await commit() }; // the completing chunk waits: the file appears in its answer
    const committed = commit();
    markHandled(committed); // seen by the caller (receive.ts settle), which logs a failure
    const received = offset + size;
    const next = { ...row, received, last_part: part + sizes.length - 1, staged: 0, hasher: hasher.token };
    return { row: { ...row, received }, committed, next };
  }
  const stored = await deps.storeChunk(row.id, tap(chunk.body, hasher, undefined), { size, maxBytes: row.length - offset, checksum: chunk.checksum });
  await follow(succession.after); // a refused chunk's object stays registered for the sweep (chunks.ts)
  const after = await deps.rows.append(row.id, token, [{ offset, length: stored.length, storageKey: stored.storageKey, part: null, etag: null }], hasher.token);
  hasher.commit(after.received);
  const run = [...staged, { offset, length: stored.length, storageKey: stored.storageKey, part: null, etag: null }];
  const runBytes = run.reduce((sum, segment) => sum + segment.length, 0);
  if (runBytes >= deps.multipart.minPartBytes || after.received === after.length) await foldStaged(deps, after, token, run, part, runBytes);
  return { row: after };
}

/** Streams the staged chunks from storage into one part and records it in their place. */
async function foldStaged(deps: PartDeps, row: UploadRow, token: string, run: readonly Segment[], part: number, bytes: number): Promise<void> {
  const etag = await deps.multipart.putPart(row.storage_key!, row.multipart_id!, part, joinSegments(deps.store, run), bytes);
  await deps.rows.fold(row.id, token, run, { offset: run[0]!.offset, length: bytes, storageKey: null, part, etag });
}

/** Makes the final object from the recorded parts (once) and returns its sha256. */
export async function completeParts(deps: PartDeps, row: UploadRow): Promise<{ storageKey: string; sha256: string }> {
  const storageKey = row.storage_key!;
  // A completion that failed after S3 had assembled the object (a refused commit) finds it there when retried.
  if (!(await deps.store.stat(storageKey))) {
    const segments = await deps.rows.segments(row.id);
    if (segments.some((segment) => segment.part === null)) throw new Error('resumable upload: staged chunks left at completion'); // foldStaged runs first
    await deps.multipart.complete(
      storageKey,
      row.multipart_id!,
      segments.map((segment) => ({ part: segment.part!, etag: segment.etag! })),
    );
  }
  const running = deps.hashes.digest(row);
  if (running) return { storageKey, sha256: running };
  const hash = createHash('sha256');
  for await (const bytes of await deps.store.get(storageKey)) hash.update(bytes as Buffer);
  return { storageKey, sha256: hash.digest('hex') };
}
