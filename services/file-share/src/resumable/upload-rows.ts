// The rows of resumable uploads (migrations/0007_resumable_uploads.sql) and every change of them. Which request
// may write to an upload is decided here, in PostgreSQL, by a lease: one UPDATE takes it only when the upload is
// active, unexpired, at the offset the client names and not leased by a live request. Its holder renews it while
// the body streams; a replica that dies loses it within LEASE_SECONDS. A chunk counts only when its segment row
// and the new offset commit together under the lease, so two replicas can never both append at one offset.
import { conflict, HttpError, notFound } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';

export const LEASE_SECONDS = 30;
/** How long an ended upload answers 410 (then 404). */
const TOMBSTONE_HOURS = 24;
/**
 * How long a PATCH waits for the previous chunk's commit (answered before it: s3-parts.ts), and how often it looks
 * when that commit runs on another replica (on this one, the commit wakes the waiting lease at once).
 */
const COMMIT_WAIT_MS = 10_000;
const COMMIT_POLL_MS = 10;

export const uploadRow = z.object({
  id: z.string(),
  owner: z.string(),
  path: z.string(),
  length: int8,
  received: int8,
  metadata: z.record(z.string(), z.string()),
  storage_key: z.string().nullable(),
  multipart_id: z.string().nullable(),
  hasher: z.string().nullable(),
  state: z.enum(['active', 'done', 'terminated', 'expired']),
  expires_at: z.number(),
  /** Whether the lease is held by a live request (computed by the database's clock). */
  leased: z.boolean(),
  expired: z.boolean(),
});
export type UploadRow = z.output<typeof uploadRow>;

/** The upload as a lease takes it: also its highest part number and how many staged chunks wait (s3-parts.ts). */
const leasedRow = uploadRow.extend({ last_part: z.number(), staged: z.number() });
export type LeasedRow = z.output<typeof leasedRow>;

const columns = sql.fragment`id::text as id, owner, path, length, received, metadata, storage_key, multipart_id, hasher::text as hasher, state, expires_at,
  (lease_token is not null and leased_until > now()) as leased, (expires_at <= now()) as expired`;

/** A received chunk: an object of its own (storageKey), or a part of the upload's multipart upload (part, etag). */
export interface Segment {
  offset: number;
  length: number;
  storageKey: string | null;
  part: number | null;
  etag: string | null;
}

const gone = (row: UploadRow) => row.state !== 'active' || row.expired;

/**
 * `expiresAfterSeconds` after the last chunk, but never later than `maxAgeSeconds` after creation: the sweep of
 * interrupted S3 uploads (uploads.abandoned_after_seconds) would end an older multipart upload anyway.
 */
export function createUploadRows(pool: DatabasePool, expiresAfterSeconds: number, maxAgeSeconds: number) {
  const changes = createChangeSignals();
  const expiry = sql.fragment`least(now() + make_interval(secs => ${expiresAfterSeconds}), created_at + make_interval(secs => ${maxAgeSeconds}))`;

  async function find(id: string): Promise<UploadRow | null> {
    return pool.maybeOne(sql.type(uploadRow)`select ${columns} from resumable_uploads where id = ${id}`);
  }

  /** The upload as its owner sees it: 404 when unknown or someone else's, 410 once ended or expired. */
  async function visible(id: string, owner: string): Promise<UploadRow> {
    const row = await find(id);
    if (!row || row.owner !== owner) throw notFound('No such upload');
    if (row.state === 'done') return row;
    if (gone(row)) throw new HttpError(410, `The upload has ${row.state === 'terminated' ? 'been terminated' : 'expired'}`);
    return row;
  }

  return {
    find,
    visible,

    /** `reservation`: the file request whose use this upload took (given back if it ends without a file). */
    async create(input: {
      id: string;
      owner: string;
      path: string;
      length: number;
      metadata: Record<string, string>;
      storageKey?: string;
      multipartId?: string;
      reservation?: string | null;
    }): Promise<UploadRow> {
      return pool.transaction(async (tx) => {
        const row = await tx.one(sql.type(uploadRow)`
          insert into resumable_uploads (id, owner, path, length, metadata, storage_key, multipart_id, share_link_id, expires_at)
          values (${input.id}, ${input.owner}, ${input.path}, ${input.length}, ${sql.jsonb(input.metadata)}, ${input.storageKey ?? null}, ${input.multipartId ?? null}, ${input.reservation ?? null},
            least(now() + make_interval(secs => ${expiresAfterSeconds}), now() + make_interval(secs => ${maxAgeSeconds})))
          returning ${columns}`);
        // The final object stays registered while the upload lives; its end (expiry, termination) makes it due.
        if (input.storageKey) await tx.query(sql.unsafe`update object_garbage set delete_after = 'infinity' where storage_key = ${input.storageKey}`);
        return row;
      });
    },

    /**
     * Takes the upload for one request at `offset`; the refusal says why (404, 410, 409 offset, 423 in use). The
     * answer also tells the s3 driver where its parts stand, so a chunk costs no further query before its bytes.
     */
    async lease(id: string, owner: string, offset: number, token: string): Promise<LeasedRow> {
      const waitUntil = Date.now() + COMMIT_WAIT_MS;
      for (;;) {
        const row = await pool.maybeOne(sql.type(leasedRow)`
          update resumable_uploads set lease_token = ${token}, leased_until = now() + make_interval(secs => ${LEASE_SECONDS})
          where id = ${id} and owner = ${owner} and state = 'active' and expires_at > now() and received = ${offset}
            and (lease_token is null or leased_until <= now())
          returning ${columns},
            (select coalesce(max(part), 0) from resumable_segments where upload_id = ${id}) as last_part,
            (select count(*) from resumable_segments where upload_id = ${id} and part is null)::int as staged`);
        if (row) return row;
        const current = await visible(id, owner);
        if (current.state === 'done')
          throw new HttpError(409, `Upload-Offset is ${current.length}: the upload is complete`, { headers: { 'upload-offset': String(current.length) } });
        // The chunk before this one was answered and its commit is on its way (s3-parts.ts), on whichever
        // replica took it: wait for it rather than answer an offset that is about to move.
        if (Date.now() < waitUntil) {
          // That commit landed between the two statements: take the lease now.
          if (current.received === offset && !current.leased) continue;
          if (current.leased && current.received < offset && offset <= current.length) {
            await changes.next(id, COMMIT_POLL_MS);
            continue;
          }
        }
        if (current.received !== offset)
          throw new HttpError(409, `Upload-Offset ${offset} does not match the upload's offset ${current.received}`, {
            headers: { 'upload-offset': String(current.received) },
          });
        throw new HttpError(423, 'Another request is writing to this upload; retry when it has ended');
      }
    },

    /** Extends a lease still held; false when it was lost (expired and taken, or the upload ended). */
    async renew(id: string, token: string): Promise<boolean> {
      const { rowCount } = await pool.query(sql.unsafe`
        update resumable_uploads set leased_until = now() + make_interval(secs => ${LEASE_SECONDS})
        where id = ${id} and lease_token = ${token} and state = 'active'`);
      return rowCount > 0;
    },

    async release(id: string, token: string): Promise<void> {
      await pool.query(sql.unsafe`update resumable_uploads set lease_token = null, leased_until = null where id = ${id} and lease_token = ${token}`);
      changes.signal(id);
    },

    /**
     * A received chunk becomes part of the upload, with the new offset (and hasher): one statement, so one round
     * trip and atomic. The chunk is one segment, or several consecutive ones (its parts, s3-parts.ts). `release`:
     * the request ends with this chunk, so its lease goes in the same statement (the request that completes the
     * upload keeps it for the completion).
     */
    async append(id: string, token: string, segments: readonly Segment[], hasher: string | null = null, release = false): Promise<UploadRow> {
      const offset = segments[0]!.offset;
      const length = segments.reduce((sum, segment) => sum + segment.length, 0);
      const keep = sql.fragment`${!release}::boolean or received + ${length} = length`;
      const row = await pool.maybeOne(sql.type(uploadRow)`
        with moved as (
          update resumable_uploads set received = received + ${length}, expires_at = ${expiry}, hasher = ${hasher},
            lease_token = case when ${keep} then lease_token end, leased_until = case when ${keep} then leased_until end
          where id = ${id} and lease_token = ${token} and state = 'active' and received = ${offset}
            and received + ${length} <= length
          returning ${columns}
        ), added as (
          insert into resumable_segments (upload_id, "offset", length, storage_key, part, etag)
          select ${id}, s."offset", s.length, s."storageKey", s.part, s.etag
          from moved, jsonb_to_recordset(${sql.jsonb(segments.map((segment) => ({ ...segment })))}) as s("offset" int8, length int8, "storageKey" text, part int, etag text)
          returning storage_key
        ), referenced as (
          -- Referenced by the upload now: the sweep leaves it until the upload ends.
          delete from object_garbage where storage_key in (select storage_key from added)
        )
        select * from moved`);
      changes.signal(id);
      if (!row) throw conflict('The upload changed while this chunk arrived (lease lost, terminated or expired); nothing was added');
      return row;
    },

    /** Staged chunks, now sent as one part, are replaced by that part (their objects go to the sweep). */
    async fold(id: string, token: string, staged: readonly Segment[], part: Segment): Promise<void> {
      await pool.transaction(async (tx) => {
        const held = await tx.exists(sql.unsafe`select 1 from resumable_uploads where id = ${id} and lease_token = ${token} and state = 'active' for update`);
        if (!held) throw conflict('The upload changed while its staged chunks were sent (lease lost, terminated or expired)');
        await dropSegments(
          tx,
          sql.fragment`upload_id = ${id} and "offset" = any(${sql.array(
            staged.map((s) => s.offset),
            'int8',
          )})`,
        );
        await insertSegment(tx, id, part);
      });
    },

    async segments(id: string): Promise<Segment[]> {
      const rows = await pool.any(sql.type(
        z.object({ offset: int8, length: int8, storage_key: z.string().nullable(), part: z.number().nullable(), etag: z.string().nullable() }),
      )`
        select "offset", length, storage_key, part, etag from resumable_segments where upload_id = ${id} order by "offset"`);
      return rows.map((row) => ({ offset: row.offset, length: row.length, storageKey: row.storage_key, part: row.part, etag: row.etag }));
    },

    /** Ends an upload (done, terminated): its segments go to the sweep. False when it was no longer active. */
    async end(id: string, state: 'done' | 'terminated', token?: string): Promise<boolean> {
      const ended = await pool.transaction(async (tx) => {
        const { rowCount } = await tx.query(sql.unsafe`
          update resumable_uploads set state = ${state}, finished_at = now(), lease_token = null, leased_until = null
          where id = ${id} and state = 'active' ${token ? sql.fragment`and lease_token = ${token}` : sql.fragment``}`);
        const ended = rowCount > 0;
        if (ended) await dropSegments(tx, sql.fragment`upload_id = ${id}`);
        if (ended && state === 'terminated') {
          await dropFinalObjects(tx, [id]);
          await returnUses(tx, [id]);
        }
        return ended;
      });
      changes.signal(id);
      return ended;
    },

    /** Expired uploads end (their bytes go to the sweep); long-ended ones are forgotten. Returns how many expired. */
    async expire(): Promise<number> {
      return pool.transaction(async (tx) => {
        const expired = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
          update resumable_uploads set state = 'expired', finished_at = now(), lease_token = null, leased_until = null
          where state = 'active' and expires_at <= now() and (lease_token is null or leased_until <= now())
          returning id::text as id`);
        if (expired.length > 0) {
          await dropSegments(tx, sql.fragment`upload_id = any(${sql.array(expired, 'uuid')})`);
          await dropFinalObjects(tx, expired);
          await returnUses(tx, expired);
        }
        await tx.query(sql.unsafe`delete from resumable_uploads where state <> 'active' and finished_at < now() - make_interval(hours => ${TOMBSTONE_HOURS})`);
        return expired.length;
      });
    },
  };
}

/**
 * Wakes a lease waiting on an upload as soon as this replica changes the upload's row (a chunk's commit, a
 * release, its end), instead of at its next poll. Only a hint: the woken lease asks PostgreSQL again, and a change
 * made by another replica is still found by polling.
 */
function createChangeSignals() {
  const waiting = new Map<string, Set<() => void>>();
  return {
    signal(id: string): void {
      const wakers = waiting.get(id);
      waiting.delete(id);
      for (const wake of wakers ?? []) wake();
    },
    /** Resolves at the upload's next change on this replica, or after `ms`. */
    next(id: string, ms: number): Promise<void> {
      return new Promise((resolve) => {
        const wakers = waiting.get(id) ?? new Set<() => void>();
        waiting.set(id, wakers);
        const wake = () => {
          clearTimeout(timer);
          wakers.delete(wake);
          if (wakers.size === 0 && waiting.get(id) === wakers) waiting.delete(id);
          resolve();
        };
        const timer = setTimeout(wake, ms);
        wakers.add(wake);
      });
    },
  };
}

type Transaction = Parameters<Parameters<DatabasePool['transaction']>[0]>[0];

async function insertSegment(tx: Transaction, id: string, segment: Segment): Promise<void> {
  await tx.query(sql.unsafe`
    insert into resumable_segments (upload_id, "offset", length, storage_key, part, etag)
    values (${id}, ${segment.offset}, ${segment.length}, ${segment.storageKey}, ${segment.part}, ${segment.etag})`);
  // Referenced by the upload now: the sweep leaves it until the upload ends.
  if (segment.storageKey) await tx.query(sql.unsafe`delete from object_garbage where storage_key = ${segment.storageKey}`);
}

/** Chunks stored as objects go to the sweep (parts go with their multipart upload). */
async function dropSegments(tx: Transaction, where: ReturnType<typeof sql.fragment>): Promise<void> {
  await tx.query(sql.unsafe`
    with dropped as (delete from resumable_segments where ${where} returning storage_key)
    insert into object_garbage (storage_key, delete_after) select storage_key, now() from dropped where storage_key is not null
    on conflict (storage_key) do update set delete_after = now()`);
}

/** An ended upload's final object (s3) is due: deleting its key also aborts its multipart upload and parts. */
async function dropFinalObjects(tx: Transaction, ids: readonly string[]): Promise<void> {
  await tx.query(sql.unsafe`
    update object_garbage set delete_after = now()
    where storage_key in (select storage_key from resumable_uploads where id = any(${sql.array([...ids], 'uuid')}) and storage_key is not null)`);
}

/** Uploads through a file request that ended without a file give their link's use back (one per upload). */
async function returnUses(tx: Transaction, ids: readonly string[]): Promise<void> {
  await tx.query(sql.unsafe`
    update share_links l set uses = greatest(l.uses - r.count, 0)
    from (select share_link_id, count(*)::int as count from resumable_uploads
          where id = any(${sql.array([...ids], 'uuid')}) and share_link_id is not null group by share_link_id) r
    where l.id = r.share_link_id`);
}

export type UploadRows = ReturnType<typeof createUploadRows>;
