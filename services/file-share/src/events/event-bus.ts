// Fan-out of share events to the SSE clients of this process. Events are rows in PostgreSQL (written by the tree
// in the transaction that made the change); every replica holds ONE dedicated connection that LISTENs on the
// schema's channel, and on a notification reads the rows after the last one it has seen. The table is the
// truth: a notification lost while the connection was down is made good by reading from the cursor again
// after reconnecting, and a client that resumes with Last-Event-ID reads what it missed from the same table.
import { createListenConnection } from '@boxyard/kit';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { int8 } from '../db/columns.ts';
import { EVENT_NAMES, type ShareEvent } from './event-types.ts';

const eventRow = z.object({
  id: int8,
  name: z.enum(EVENT_NAMES),
  paths: z.array(z.string()),
  data: z.record(z.string(), z.unknown()),
});

const batchSize = 500;
const pollMs = 10_000;

export interface EventBusOptions {
  pool: DatabasePool;
  /** Connection URL for the LISTEN connection (no search_path needed: it only listens). */
  databaseUrl: string;
  channel: string;
  log: { warn(object: unknown, message: string): void; info(object: unknown, message: string): void };
}

export type EventListener = (event: ShareEvent) => void;

export interface EventBus {
  start(): Promise<void>;
  subscribe(listener: EventListener): () => void;
  /**
   * Events after `afterId` in id order (one page). `complete` is false when retention removed some of them, or
   * when `afterId` is beyond the newest event (an id from another database): `latestId` is where to go on from.
   */
  replay(afterId: number, limit?: number): Promise<{ events: ShareEvent[]; complete: boolean; latestId: number }>;
  close(): Promise<void>;
}

export function createEventBus(options: EventBusOptions): EventBus {
  const { pool, log } = options;
  const listeners = new Set<EventListener>();
  let cursor = 0;
  let closed = false;
  let fetching: Promise<void> | undefined;
  let again = false;
  let pollTimer: NodeJS.Timeout | undefined;

  const readAfter = (afterId: number, limit: number) =>
    pool.any(sql.type(eventRow)`select id, name, paths, data from events where id > ${afterId} order by id limit ${limit}`);

  /** Reads and dispatches everything after the cursor; concurrent wake-ups coalesce into one more pass. */
  function drain(): Promise<void> {
    if (fetching) {
      again = true;
      return fetching;
    }
    fetching = (async () => {
      do {
        again = false;
        for (;;) {
          const rows = await readAfter(cursor, batchSize);
          for (const row of rows) {
            cursor = row.id;
            for (const listener of listeners) listener(row);
          }
          if (rows.length < batchSize) break;
        }
      } while (again && !closed);
    })()
      .catch((error: unknown) => log.warn({ err: error }, 'reading share events failed; retrying on the next notification'))
      .finally(() => {
        fetching = undefined;
      });
    return fetching;
  }

  // What was committed while the connection was away is read from the cursor on reconnect.
  const connection = createListenConnection({
    databaseUrl: options.databaseUrl,
    channel: options.channel,
    applicationName: 'boxyard-file-share-events',
    log,
    onNotification: (payload) => {
      // Nobody to tell: the notification's id (the newest event of its commit; commits notify in id order) moves
      // the cursor without reading the rows. Uploads notify once per commit, and each read was a query and the
      // parsing of every event row (~0.3 statements per 10 KiB upload at 8 clients) for no one.
      const id = Number(payload);
      if (listeners.size === 0 && !fetching && payload && Number.isSafeInteger(id)) cursor = Math.max(cursor, id);
      else void drain();
    },
    onReconnected: () => drain(),
  });

  return {
    async start() {
      cursor = await pool.oneFirst(sql.type(z.object({ id: int8 }))`select coalesce(max(id), 0) as id from events`);
      await connection.start();
      await drain(); // anything committed between reading the cursor and LISTEN
      // Belt and braces: a notification can't be lost while the connection lives, but a failed read waits
      // for the next one; this poll bounds that wait.
      pollTimer = setInterval(() => void drain(), pollMs);
      pollTimer.unref();
    },

    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async replay(afterId, limit = batchSize) {
      const state = await pool.one(sql.type(z.object({ purged_through: int8, latest: int8 }))`
        select purged_through, greatest(purged_through, (select coalesce(max(id), 0) from events)) as latest from event_retention`);
      const events = [...(await readAfter(afterId, limit))];
      return { events, complete: afterId >= state.purged_through && afterId <= state.latest, latestId: state.latest };
    },

    async close() {
      closed = true;
      clearInterval(pollTimer);
      listeners.clear();
      await connection.close();
      await fetching;
    },
  };
}
