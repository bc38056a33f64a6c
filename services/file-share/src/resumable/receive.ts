// What happens to an upload while a request holds its lease: a chunk is stored and appended, and the request
// that brings the last byte completes it — the write grant is checked again, the file's object is made (s3: the
// multipart upload is completed, s3-parts.ts; otherwise the chunks are joined into a fresh `files/<uuid>`, sha256
// computed on the way) and the tree commits the path in one transaction (the same commitUpload as a plain
// upload: replacing, checksum-update event). Until then nothing is visible.
import { randomUUID } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { conflict, HttpError, ignoreError, type ObjectStore } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import type { Sweeper } from '../maintenance/sweeper.ts';
import type { Handoff, Handoffs } from './handoff.ts';
import type { Tree } from '../tree/tree-store.ts';
import { joinSegments, storeChunk } from './chunks.ts';
import type { RunningHashes } from './running-hash.ts';
import { appendPart, completeParts, type Appended, type PartDeps } from './s3-parts.ts';
import type { ChecksumHeader } from './tus-headers.ts';
import { LEASE_SECONDS, type LeasedRow, type UploadRow, type UploadRows } from './upload-rows.ts';
import type { WriteAccess } from './write-access.ts';

export interface ReceiveDeps {
  pool: DatabasePool;
  store: ObjectStore;
  tree: Tree;
  sweeper: Sweeper;
  rows: UploadRows;
  hashes: RunningHashes;
  handoffs: Handoffs;
  /** How often a streaming chunk asks whether its access still holds (a file request's link); default 5 s. */
  recheckIntervalMs?: number;
  /** Where a chunk's commit that failed after its answer is told. */
  log?: { warn(details: object, message: string): void };
}

export interface Chunk {
  body: Readable | undefined;
  /** Content-Length when the request declared one. */
  size: number | undefined;
  checksum?: ChecksumHeader | undefined;
}

/**
 * Writes one chunk at `offset` under a fresh lease (taken only by `owner`: anyone else is told the upload does not
 * exist), or under the lease of the chunk answered just before on this replica (handoff.ts), and completes the
 * upload when it is full. Returns the upload as it is afterwards. A chunk that does not complete the upload costs
 * two statements besides its bytes: the lease, and the append that also releases it (one, when it took over).
 */
export async function receive(
  deps: ReceiveDeps,
  id: string,
  owner: string,
  offset: number,
  chunk: Chunk,
  access: WriteAccess,
  recheck?: () => Promise<void>,
): Promise<{ row: UploadRow; sha256?: string }> {
  const before = await deps.handoffs.take(id, owner, offset);
  const token = before?.token ?? randomUUID();
  let leased: LeasedRow;
  try {
    leased = before?.next ?? (await deps.rows.lease(id, owner, offset, token));
  } catch (error) {
    chunk.body?.resume(); // refused before reading: drain, so the connection stays usable
    throw error;
  }
  let current: UploadRow = leased;
  let held = true;
  const stop: Stop = {};
  const body = chunk.body ? stoppable(chunk.body, stop) : undefined;
  chunk = { ...chunk, body: body?.stream };
  const endRenewal = keepLease(deps, id, token, body, recheck);
  let committing: Handoff | undefined;
  try {
    if (chunk.body && chunk.size !== 0) {
      // The grant is checked at every chunk too, so a lost permission (or a revoked link) stops an upload at once.
      try {
        if (chunk.size !== undefined && offset + chunk.size > leased.length)
          throw new HttpError(413, `The chunk would end at byte ${offset + chunk.size}, past the upload's length of ${leased.length}`);
        const grant = access(leased.path);
        if (leased.length > grant.maxBytes) throw new HttpError(413, `The upload's length is larger than the limit of ${grant.maxBytes} bytes`);
      } catch (error) {
        chunk.body.resume();
        throw error;
      }
      // What this chunk offers the next one if it is answered before its commit (decided when that commit runs).
      const offer = { owner, token, taken: false, closed: false };
      const succession = {
        after: before?.committed,
        handedOn: () => {
          offer.closed = true;
          return offer.taken;
        },
      };
      const append: Promise<Appended> = leased.multipart_id
        ? appendPart(partDeps(deps), leased, token, offset, { ...chunk, body: chunk.body }, succession).catch(asChunkError)
        : appendChunk(deps, leased, token, offset, chunk).then((row) => ({ row }));
      // A body stopped on purpose (lease lost, access ended mid-chunk) is answered with why it was stopped.
      const appended = await append.catch((error: unknown) => {
        throw stop.reason ?? error;
      });
      current = appended.row;
      held = current.leased; // the append released it unless this chunk completes the upload (or was staged)
      if (appended.committed && appended.next) {
        // Answered now; the lease stays held (and renewed) until the chunk's commit has landed or failed, and the
        // next chunk may take it over meanwhile.
        committing = Object.assign(offer, { next: appended.next, committed: appended.committed, before: before?.committed });
        deps.handoffs.offer(id, committing);
        return { row: current };
      }
    }
    if (current.received !== current.length) return { row: current };
    const sha256 = await complete(deps, current, token, access);
    return { row: (await deps.rows.find(id)) ?? current, sha256 };
  } finally {
    if (committing) void settle(deps, id, committing, endRenewal);
    else {
      endRenewal();
      // The commit this chunk took the lease over from keeps it until it lands: release only after it.
      await before?.committed.catch(ignoreError('its failure is logged where it settles'));
      if (held) await deps.rows.release(id, token);
    }
  }
}

/**
 * After a chunk answered before its commit: the commit releases the lease (or keeps it for the chunk that took it
 * over); a failed one releases it here unless a next chunk took it over, which then fails and releases it (the
 * offset stays where it was, which the client learns from its next PATCH's 409 or from HEAD).
 */
async function settle(deps: ReceiveDeps, id: string, handoff: Handoff, endRenewal: () => void): Promise<void> {
  try {
    await handoff.committed;
  } catch (error) {
    deps.log?.warn({ err: error, upload: id }, 'a resumable chunk answered before its commit was not stored; the upload stays at its previous offset');
    if (!handoff.taken)
      await deps.rows
        .release(id, handoff.token)
        .catch((releaseError: unknown) => deps.log?.warn({ err: releaseError, upload: id }, 'releasing the lease failed; it runs out by itself'));
  } finally {
    endRenewal();
  }
}

interface Stop {
  reason?: HttpError;
}

/**
 * The request's body as the chunk's code reads it, with a way to stop it on purpose: the chunk then fails with
 * `stop.reason`, and the rest of the body is read and dropped so the refusal reaches the client (destroying the
 * request itself would close the connection before any answer).
 */
function stoppable(body: Readable, stop: Stop) {
  const stream = new PassThrough();
  body.once('error', (error) => stream.destroy(error));
  body.pipe(stream);
  return {
    stream,
    halt(reason: HttpError) {
      stop.reason ??= reason;
      body.unpipe(stream);
      stream.destroy(reason);
      body.resume();
    },
  };
}

/**
 * Renews the lease while the request runs; a lost lease stops the body, so nothing more is written for it. So does
 * a `recheck` that throws (a file request's link revoked or expired while its bytes stream): the chunk is dropped.
 */
function keepLease(deps: ReceiveDeps, id: string, token: string, body: ReturnType<typeof stoppable> | undefined, recheck?: () => Promise<void>): () => void {
  const renewal = setInterval(
    () => {
      void deps.rows.renew(id, token).then((held) => {
        if (!held) body?.halt(conflict('The upload was taken over or ended while this request ran'));
      }, ignoreError('a missed renewal is retried a third of the lease later'));
    },
    (LEASE_SECONDS * 1000) / 3,
  );
  renewal.unref();
  const check =
    recheck && body
      ? setInterval(() => void recheck().catch((error: unknown) => error instanceof HttpError && body.halt(error)), deps.recheckIntervalMs ?? 5000)
      : undefined;
  check?.unref();
  return () => {
    clearInterval(renewal);
    clearInterval(check);
  };
}

/** A chunk's failure as the caller should see it: a body that broke off is a 400 (nothing of it was kept). */
function asChunkError(error: unknown): never {
  if (error instanceof HttpError || (error as { statusCode?: number }).statusCode !== undefined) throw error;
  throw new HttpError(400, 'The chunk was interrupted before it ended; nothing of it was kept');
}

function partDeps(deps: ReceiveDeps): PartDeps {
  const chunks = { pool: deps.pool, store: deps.store, discard: deps.sweeper.discardUpload };
  return {
    store: deps.store,
    multipart: deps.store.multipart!,
    rows: deps.rows,
    hashes: deps.hashes,
    storeChunk: (id, body, options) => storeChunk(chunks, id, body, options),
  };
}

async function appendChunk(deps: ReceiveDeps, row: UploadRow, token: string, offset: number, chunk: Chunk): Promise<UploadRow> {
  const discard = deps.sweeper.discardUpload;
  const stored = await storeChunk({ pool: deps.pool, store: deps.store, discard }, row.id, chunk.body!, {
    size: chunk.size,
    maxBytes: row.length - offset,
    checksum: chunk.checksum,
  }).catch(asChunkError);
  try {
    return await deps.rows.append(row.id, token, [{ offset, length: stored.length, storageKey: stored.storageKey, part: null, etag: null }], null, true);
  } catch (error) {
    await discard(stored.storageKey);
    throw error;
  }
}

/** Joins the chunks into the file's object and commits its path; the grant is checked once more first. */
async function complete(deps: ReceiveDeps, row: UploadRow, token: string, access: WriteAccess): Promise<string> {
  const grant = access(row.path);
  const existing = await deps.tree.find(row.path);
  if (existing?.kind === 'dir') throw conflict(`${row.path} is a folder`);
  if (existing && !grant.mayReplace) throw new HttpError(403, `${row.path} exists; replacing a file needs the delete permission`);
  if (row.multipart_id) {
    // The final object stays registered (and so removable) until the commit takes it over.
    const stored = await completeParts(partDeps(deps), row);
    return commit(deps, row, grant, stored.storageKey, stored.sha256);
  }
  const storageKey = `files/${randomUUID()}`;
  await deps.pool.query(sql.unsafe`insert into object_garbage (storage_key, delete_after) values (${storageKey}, now() + interval '1 day')`);
  try {
    const segments = await deps.rows.segments(row.id);
    const stored = await deps.store.put(storageKey, joinSegments(deps.store, segments), {
      size: row.length,
      maxBytes: row.length,
      contentType: 'application/octet-stream',
    });
    return await commit(deps, row, grant, storageKey, stored.sha256);
  } catch (error) {
    await deps.sweeper.discardUpload(storageKey);
    throw error;
  }
}

/** The path appears here, atomically, with its sha256 (checksum-update); a lost lease would have stopped the bytes. */
async function commit(deps: ReceiveDeps, row: UploadRow, grant: ReturnType<WriteAccess>, storageKey: string, sha256: string): Promise<string> {
  await deps.tree.commitUpload({ path: row.path, storageKey, size: row.length, sha256, userId: grant.userId, mayReplace: grant.mayReplace });
  await deps.rows.end(row.id, 'done');
  void deps.sweeper.sweepNow(); // the chunks, and the bytes this file replaced
  return sha256;
}
