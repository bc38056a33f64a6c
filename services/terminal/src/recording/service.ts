// Recording, where it happens and why: in the gateway, from an observer stream the agent serves (see
// agent/shell-session.ts observe). Not in the agent: a session pod must not hold the installation's storage
// credentials (its user's shell shares the pod), and the gateway already speaks to PostgreSQL and the store. Not
// by tapping the user's socket: output made while nobody is attached would be missed, and every reattach's
// scrollback replay recorded twice. The observer stream starts at an output offset, so a gateway that takes a
// recording over after another died resumes where the stored chunks end (a gap only if the agent's scrollback
// no longer holds it, and then marked). What any process's death can lose: at most the last flush_seconds.
import { randomUUID } from 'node:crypto';
import type { ObjectStore } from '@boxyard/kit';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, type Registry } from '@prometheus-io/client';
import type { DatabasePool } from 'slonik';
import type { RecordingConfig } from '../config.ts';
import type { SessionService } from '../sessions/service.ts';
import type { SessionRow } from '../sessions/store.ts';
import { Recorder, type RecorderEnd } from './recorder.ts';
import { createRecordingStore } from './store.ts';

const LEASE_SECONDS = 15;
const SWEEP_MS = 3_600_000;
const SWEEP_BATCH = 100;

export const RECORDED_NOTICE = 'This session is recorded (its output';

export interface RecordingServiceOptions {
  pool: DatabasePool;
  objects: ObjectStore;
  config: RecordingConfig;
  sessions: SessionService;
  shell: string | null;
  log: FastifyBaseLogger;
  metrics: Registry;
  /** More to sweep on the same schedule (the audit log's retention). */
  sweep?: () => Promise<unknown>;
}

export function createRecordingService(options: RecordingServiceOptions) {
  const { config, objects, sessions, log } = options;
  const store = createRecordingStore(options.pool);
  /** This gateway process: the lease holder's name. */
  const writer = `gateway-${process.pid}-${randomUUID().slice(0, 8)}`;
  const recorders = new Map<string, Recorder>();
  const starting = new Set<string>();
  const bytes = new Counter({ name: 'boxyard_terminal_recording_bytes_total', help: 'Bytes of asciicast stored by this gateway.', registers: [options.metrics] });
  const ends = new Counter({ name: 'boxyard_terminal_recordings_ended_total', help: 'Recordings this gateway stopped writing, by how they ended.', labelNames: ['end'], registers: [options.metrics] });
  let closed = false;

  const fail = (row: SessionRow, error: Error) => {
    if (config.mode !== 'required') return;
    log.error({ err: error, session: row.id }, 'recording.mode is required and the recording failed: ending the session');
    void sessions.stop(row.id, 'recording_failed').catch((stopError: unknown) => log.error({ err: stopError, session: row.id }, 'could not end the session'));
  };

  async function ended(row: SessionRow, end: RecorderEnd) {
    recorders.delete(row.id);
    ends.inc({ end });
    if (end !== 'released' || closed) return;
    // The agent went away without an exit (killed, pod deleted): if the session is over, so is its recording.
    const current = await sessions.store.get(row.id);
    if (!current || !['starting', 'running'].includes(current.state)) await store.completeOrphan(row.id);
  }

  /** Starts (or takes over) writing the session's recording in this process. */
  async function record(row: SessionRow): Promise<void> {
    if (config.mode === 'off' || closed || recorders.has(row.id) || starting.has(row.id) || !row.agent_address) return;
    starting.add(row.id);
    try {
      const claim = await store.createAndClaim(
        { id: row.id, ownerId: row.owner_id, ownerUsername: row.owner_username, startedAt: row.created_at, cols: 80, rows: 24, shell: options.shell, input: config.input, retentionDays: config.retention_days },
        writer,
        LEASE_SECONDS,
      );
      if (!claim) return; // another gateway is writing it
      const socket = await sessions.connect({ ...row, agent_address: row.agent_address }, { from: claim.output_offset, input: config.input });
      // Listening from the start: the agent's first frames may come in the same read as the upgrade's answer.
      const opened = new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      });
      const recorder = new Recorder(
        {
          id: row.id, writer, objects, store: store, startedAt: claim.started_at, seq: claim.chunks, bytes: claim.bytes, maxBytes: config.max_bytes,
          flushMs: config.flush_seconds * 1000, leaseSeconds: LEASE_SECONDS, input: config.input, log,
          onFailure: (error) => fail(row, error),
          onEnd: (end) => void ended(row, end).catch(() => {}),
          countBytes: (n) => bytes.inc(n),
        },
        socket,
      );
      recorders.set(row.id, recorder);
      await opened.catch((error: unknown) => {
        recorders.delete(row.id);
        throw error;
      });
      // The first chunk at once: in `required` mode a store that cannot take it ends the session now.
      await recorder.flush();
    } catch (error) {
      log.warn({ err: error, session: row.id }, 'could not start recording the session');
      await store.finish(row.id, writer, 'failed').catch(() => {});
      fail(row, error as Error);
    } finally {
      starting.delete(row.id);
    }
  }

  async function sweepOnce(): Promise<number> {
    let swept = 0;
    for (;;) {
      const ids = await store.expired(SWEEP_BATCH);
      for (const id of ids) {
        await objects.deletePrefix(`recordings/${id}/`);
        await store.delete(id);
      }
      swept += ids.length;
      if (ids.length < SWEEP_BATCH) return swept;
    }
  }

  let sweeper: NodeJS.Timeout | undefined;
  return {
    store,
    objects,
    mode: config.mode,
    /** What a socket attaching to a recorded session is told first; undefined when nothing is recorded. */
    notice: config.mode === 'off' ? undefined : `${RECORDED_NOTICE}${config.input ? ' and what is typed' : ''}${config.mode === 'required' ? '; it ends if the recording fails' : ''}).`,
    record,
    /** The session ended: a recording nobody writes any more is complete. */
    sessionEnded: (id: string) => (recorders.has(id) ? Promise.resolve() : store.completeOrphan(id).then(() => undefined)),
    sweepOnce,
    startSweeper() {
      const run = () => void Promise.all([sweepOnce(), options.sweep?.()]).catch((error: unknown) => log.warn({ err: error }, 'recording sweep failed'));
      run();
      sweeper = setInterval(run, SWEEP_MS);
      sweeper.unref();
    },
    async close(): Promise<void> {
      closed = true;
      clearInterval(sweeper);
      await Promise.all([...recorders.values()].map((recorder) => recorder.close().catch(() => {})));
    },
  };
}

export type RecordingService = ReturnType<typeof createRecordingService>;
