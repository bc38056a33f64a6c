// SQL of recordings and their chunks (migrations/0001_recordings.sql). A gateway writes a recording only while
// its lease holds (`writer`, `lease_until`), so two replicas never append to one recording; each chunk's row and
// the recording's totals change in one transaction, after the chunk's object is stored.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export const recordingRow = z.object({
  id: z.string(),
  owner_id: z.string(),
  owner_username: z.string(),
  started_at: z.number(),
  cols: z.number(),
  rows: z.number(),
  shell: z.string().nullable(),
  input: z.boolean(),
  state: z.enum(['recording', 'complete', 'truncated', 'failed']),
  duration: z.number(),
  bytes: z.coerce.number(),
  chunks: z.number(),
  output_offset: z.coerce.number(),
  /** Someone holds the lease now: the recording is being written. */
  live: z.boolean(),
  expires_at: z.number(),
});
export type RecordingRow = z.output<typeof recordingRow>;

const chunkRow = z.object({ seq: z.number(), first_at: z.number(), last_at: z.number(), bytes: z.number(), storage_key: z.string() });
export type ChunkRow = z.output<typeof chunkRow>;

const hitRow = z.object({
  recording_id: z.string(),
  seq: z.number(),
  first_at: z.number(),
  storage_key: z.string(),
  owner_id: z.string(),
  owner_username: z.string(),
  started_at: z.number(),
});
export type SearchHit = z.output<typeof hitRow>;

const columns = sql.fragment`id, owner_id, owner_username, started_at, cols, rows, shell, input, state, duration, bytes, chunks,
  output_offset, coalesce(lease_until > now(), false) as live, expires_at`;

export interface NewRecording {
  id: string;
  ownerId: string;
  ownerUsername: string;
  startedAt: number;
  cols: number;
  rows: number;
  shell: string | null;
  input: boolean;
  retentionDays: number;
}

export interface ChunkCommit {
  id: string;
  writer: string;
  seq: number;
  firstAt: number;
  lastAt: number;
  bytes: number;
  key: string;
  words: string;
  outputOffset: number;
  leaseSeconds: number;
}

const claimed = z.object({ output_offset: z.coerce.number(), chunks: z.number(), started_at: z.number(), bytes: z.coerce.number() });

export function createRecordingStore(pool: DatabasePool) {
  return {
    /** Creates the recording (once per session) and claims it for `writer`; null when another writer holds it. */
    async createAndClaim(recording: NewRecording, writer: string, leaseSeconds: number) {
      await pool.query(sql.unsafe`
        insert into terminal_recordings (id, owner_id, owner_username, started_at, cols, rows, shell, input, expires_at)
        values (${recording.id}::uuid, ${recording.ownerId}::uuid, ${recording.ownerUsername}, to_timestamp(${recording.startedAt / 1000}),
          ${recording.cols}, ${recording.rows}, ${recording.shell}, ${recording.input},
          to_timestamp(${recording.startedAt / 1000}) + make_interval(days => ${recording.retentionDays}))
        on conflict (id) do nothing`);
      return this.claim(recording.id, writer, leaseSeconds);
    },

    /** Takes the recording over when nobody's lease holds (a gateway died): where to resume, or null. */
    claim: (id: string, writer: string, leaseSeconds: number) =>
      pool.maybeOne(sql.type(claimed)`
        update terminal_recordings set writer = ${writer}, lease_until = now() + make_interval(secs => ${leaseSeconds}), updated_at = now()
        where id = ${id}::uuid and state = 'recording' and (lease_until is null or lease_until < now() or writer = ${writer})
        returning output_offset, chunks, (extract(epoch from started_at) * 1000)::float8 as started_at, bytes`),

    /** Records a stored chunk; false when the lease was lost meanwhile (the object is then garbage). */
    async commitChunk(chunk: ChunkCommit): Promise<boolean> {
      return pool.transaction(async (tx) => {
        const updated = await tx.query(sql.unsafe`
          update terminal_recordings set bytes = bytes + ${chunk.bytes}, chunks = chunks + 1, duration = greatest(duration, ${chunk.lastAt}),
            output_offset = ${chunk.outputOffset}, lease_until = now() + make_interval(secs => ${chunk.leaseSeconds}), updated_at = now()
          where id = ${chunk.id}::uuid and writer = ${chunk.writer} and state = 'recording'`);
        if (updated.rowCount !== 1) return false;
        await tx.query(sql.unsafe`
          insert into terminal_recording_chunks (recording_id, seq, first_at, last_at, bytes, storage_key, words)
          values (${chunk.id}::uuid, ${chunk.seq}, ${chunk.firstAt}, ${chunk.lastAt}, ${chunk.bytes}, ${chunk.key}, to_tsvector('simple', ${chunk.words}))`);
        return true;
      });
    },

    renew: (id: string, writer: string, leaseSeconds: number) =>
      pool.query(
        sql.unsafe`update terminal_recordings set lease_until = now() + make_interval(secs => ${leaseSeconds}) where id = ${id}::uuid and writer = ${writer} and state = 'recording'`,
      ),

    /** The writer is done: `recording` again (released for another gateway to resume) or a final state. */
    finish: (id: string, writer: string, state: RecordingRow['state']) =>
      pool.query(
        sql.unsafe`update terminal_recordings set state = ${state}, lease_until = null, writer = null, updated_at = now() where id = ${id}::uuid and writer = ${writer} and state = 'recording'`,
      ),

    /** The session ended and no writer holds the recording: it is as complete as it will get. */
    completeOrphan: (id: string) =>
      pool.query(
        sql.unsafe`update terminal_recordings set state = 'complete', updated_at = now() where id = ${id}::uuid and state = 'recording' and (lease_until is null or lease_until < now())`,
      ),

    get: (id: string) => pool.maybeOne(sql.type(recordingRow)`select ${columns} from terminal_recordings where id = ${id}::uuid`),

    /** Newest first; `before`: the started_at/id of the last row of the previous page. */
    list: (filter: { ownerId?: string | undefined; limit: number; before?: { startedAt: number; id: string } | undefined }) =>
      pool.any(sql.type(recordingRow)`
        select ${columns} from terminal_recordings
        where ${filter.ownerId ? sql.fragment`owner_id = ${filter.ownerId}::uuid` : sql.fragment`true`}
          and ${filter.before ? sql.fragment`(started_at, id) < (to_timestamp(${filter.before.startedAt / 1000}), ${filter.before.id}::uuid)` : sql.fragment`true`}
        order by started_at desc, id desc
        limit ${filter.limit}`),

    chunks: (id: string) =>
      pool.any(
        sql.type(chunkRow)`select seq, first_at, last_at, bytes, storage_key from terminal_recording_chunks where recording_id = ${id}::uuid order by seq`,
      ),

    /**
     * Chunks whose words contain `term` (one word, matched whole or as a prefix), newest recording first; paged
     * by (recording started_at, id, seq). The GIN index answers the match; `limit` bounds the rest.
     */
    search: (filter: { term: string; ownerId?: string | undefined; limit: number; after?: { startedAt: number; id: string; seq: number } | undefined }) =>
      pool.any(sql.type(hitRow)`
        select c.recording_id, c.seq, c.first_at, c.storage_key, r.owner_id, r.owner_username, (extract(epoch from r.started_at) * 1000)::float8 as started_at
        from terminal_recording_chunks c join terminal_recordings r on r.id = c.recording_id
        where c.words @@ to_tsquery('simple', ${`${filter.term.replaceAll("'", '')}:*`})
          and ${filter.ownerId ? sql.fragment`r.owner_id = ${filter.ownerId}::uuid` : sql.fragment`true`}
          and ${filter.after ? sql.fragment`(r.started_at, r.id, -c.seq) < (to_timestamp(${filter.after.startedAt / 1000}), ${filter.after.id}::uuid, ${-filter.after.seq})` : sql.fragment`true`}
        order by r.started_at desc, r.id desc, c.seq asc
        limit ${filter.limit}`),

    /** Recordings past their retention (at most `limit`), for the sweeper. */
    expired: (limit: number) =>
      pool.anyFirst(sql.type(z.object({ id: z.string() }))`select id from terminal_recordings where expires_at < now() order by expires_at limit ${limit}`),

    delete: (id: string) => pool.query(sql.unsafe`delete from terminal_recordings where id = ${id}::uuid`),
  };
}

export type RecordingStore = ReturnType<typeof createRecordingStore>;
