// Recording, where it happens and why: in the gateway. Not in the agent: a session pod must not hold the
// installation's storage credentials (its user's shell shares the pod), and the gateway already speaks to
// PostgreSQL and the store. While a user is attached through this gateway the recorder reads that user's own
// stream (the agent tells it the output offset the stream starts at: a reattach's scrollback replay is not
// recorded twice); while nobody is, an observer stream the agent serves from an output offset (output made
// while nobody is attached is recorded too). One stream, not two, while someone types: see feed.ts. A gateway
// that takes a recording over after another died resumes where the stored chunks end (a gap only if the agent's
// scrollback no longer holds it, and then marked). What any process's death can lose: at most the last
// flush_seconds.
import { randomUUID } from 'node:crypto';
import type { ObjectStore } from '@boxyard/kit';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, type Registry } from '@prometheus-io/client';
import type { DatabasePool } from 'slonik';
import type { RecordingConfig } from '../config.ts';
import type { SessionService } from '../sessions/service.ts';
import type { SessionRow } from '../sessions/store.ts';
import { Feed, type RecordingControl, type TapState } from './feed.ts';
import { Recorder, type RecorderEnd } from './recorder.ts';
import { createRecordingStore } from './store.ts';
import { ignoreError } from '@boxyard/kit';

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
  const feeds = new Map<string, Feed>();
  /** Users' streams through this gateway that the agent marks for recording, per session (feed.ts). */
  const taps = new Map<string, Set<TapState>>();
  const tapsOf = (id: string) => {
    let set = taps.get(id);
    if (!set) taps.set(id, (set = new Set()));
    return set;
  };
  const forgetTaps = (id: string) => {
    if (taps.get(id)?.size === 0 && !feeds.has(id)) taps.delete(id);
  };
  const starting = new Set<string>();
  const bytes = new Counter({
    name: 'boxyard_terminal_recording_bytes_total',
    help: 'Bytes of asciicast stored by this gateway.',
    registers: [options.metrics],
  });
  const ends = new Counter({
    name: 'boxyard_terminal_recordings_ended_total',
    help: 'Recordings this gateway stopped writing, by how they ended.',
    labelNames: ['end'],
    registers: [options.metrics],
  });
  let closed = false;

  const fail = (row: SessionRow, error: Error) => {
    if (config.mode !== 'required') return;
    log.error({ err: error, session: row.id }, 'recording.mode is required and the recording failed: ending the session');
    void sessions.stop(row.id, 'recording_failed').catch((stopError: unknown) => log.error({ err: stopError, session: row.id }, 'could not end the session'));
  };

  async function ended(row: SessionRow, end: RecorderEnd) {
    recorders.delete(row.id);
    feeds.get(row.id)?.stop();
    feeds.delete(row.id);
    forgetTaps(row.id);
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
        {
          id: row.id,
          ownerId: row.owner_id,
          ownerUsername: row.owner_username,
          startedAt: row.created_at,
          cols: 80,
          rows: 24,
          shell: options.shell,
          input: config.input,
          retentionDays: config.retention_days,
        },
        writer,
        LEASE_SECONDS,
      );
      if (!claim) return; // another gateway is writing it
      const recorder = new Recorder({
        id: row.id,
        writer,
        objects,
        store: store,
        startedAt: claim.started_at,
        seq: claim.chunks,
        bytes: claim.bytes,
        offset: claim.output_offset,
        maxBytes: config.max_bytes,
        flushMs: config.flush_seconds * 1000,
        leaseSeconds: LEASE_SECONDS,
        input: config.input,
        required: config.mode === 'required',
        log,
        onFailure: (error) => fail(row, error),
        onEnd: (end) => void ended(row, end).catch(ignoreError('ended() marks the row; the lease sweep finishes a row left behind')),
        pace: (paused) => feed.pace(paused),
        countBytes: (n) => bytes.inc(n),
      });
      const feed = new Feed(
        recorder,
        tapsOf(row.id),
        (from) => sessions.connect({ ...row, agent_address: row.agent_address! }, { observe: { from, input: config.input } }),
        log,
      );
      recorders.set(row.id, recorder);
      feeds.set(row.id, feed);
      // From the observer first (it brings what was made before this recorder ran); a live tap then takes over.
      await feed.observe().catch((error: unknown) => {
        recorders.delete(row.id);
        feeds.delete(row.id);
        feed.stop();
        recorder.abandon();
        throw error;
      });
      // The first chunk at once: in `required` mode a store that cannot take it ends the session now.
      await recorder.flush();
    } catch (error) {
      log.warn({ err: error, session: row.id }, 'could not start recording the session');
      await store.finish(row.id, writer, 'failed').catch(ignoreError('the recording already failed; its lease expires if this write fails too'));
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

  /**
   * The recorder's view of a user's stream through this gateway (opened with `record`, see agent/client.ts): the
   * proxy hands it the agent's output and the control messages meant for the recorder, after the client got them.
   */
  function tap(id: string): RecordingTap {
    const state: TapState = { offset: undefined };
    return {
      output(data) {
        if (state.offset === undefined) return;
        const start = state.offset;
        state.offset += data.length;
        feeds.get(id)?.tapOutput(state, start, data);
      },
      control(message) {
        const set = tapsOf(id);
        if (message.type === 'recording' && state.offset === undefined) {
          state.offset = message.offset ?? 0;
          set.add(state);
        }
        // The first live tap's input and resizes count (every recording stream carries them).
        feeds.get(id)?.control(message, set.values().next().value === state);
      },
      close() {
        const set = taps.get(id);
        if (!set?.delete(state)) return;
        if (set.size === 0) feeds.get(id)?.tapsGone();
        forgetTaps(id);
      },
    };
  }

  let sweeper: NodeJS.Timeout | undefined;
  return {
    store,
    objects,
    mode: config.mode,
    /** What a socket attaching to a recorded session is told first; undefined when nothing is recorded. */
    notice:
      config.mode === 'off'
        ? undefined
        : `${RECORDED_NOTICE}${config.input ? ' and what is typed' : ''}${config.mode === 'required' ? '; it ends if the recording fails' : ''}).`,
    record,
    tap,
    /** How a user's stream is opened so the recorder can read it too; undefined when nothing is recorded. */
    stream: config.mode === 'off' ? undefined : { record: { input: config.input } },
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
      await Promise.all(
        [...recorders.values()].map((recorder) => recorder.close().catch(ignoreError('stopping: a recorder that cannot close is finished by the lease sweep'))),
      );
    },
  };
}

export type RecordingService = ReturnType<typeof createRecordingService>;

/** What the proxy hands the recorder (ws/proxy.ts). */
export interface RecordingTap {
  output(data: Buffer): void;
  control(message: RecordingControl): void;
  close(): void;
}
