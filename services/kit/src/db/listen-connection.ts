// One dedicated PostgreSQL connection that LISTENs on a channel and comes back after it is lost. Notifications
// sent while it was away are gone, so `onReconnected` tells the owner to re-read what it keeps (its table, its
// credentials): notifications are a fast path, never the only one. A cache also hears `onLost` at once (it must
// stop trusting what it holds before the reconnect) and may ask for a failed first connect to be retried.
import pg from 'pg';
import { ignoreError } from '../errors/ignore-error.ts';

export interface ListenConnectionOptions {
  /** Connection URL; a LISTEN connection needs no search_path. */
  databaseUrl: string;
  channel: string;
  /** Shown in pg_stat_activity. */
  applicationName: string;
  onNotification(payload: string | undefined): void;
  /** After a reconnect (not after the first connect). */
  onReconnected(): Promise<void> | void;
  /** As soon as the connection is lost (before any reconnect). */
  onLost?(): void;
  /** Keep trying when the first connect fails (start still rejects; onReconnected follows the first success). */
  retryStart?: boolean;
  log: { warn(object: unknown, message: string): void };
  /** Delay before reconnecting a lost connection (default 1 s). */
  reconnectMs?: number;
}

export interface ListenConnection {
  /** Connects and LISTENs; rejects when the first connect fails. */
  start(): Promise<void>;
  /** Whether notifications are flowing right now. */
  readonly connected: boolean;
  close(): Promise<void>;
}

export function createListenConnection(options: ListenConnectionOptions): ListenConnection {
  const { channel, log } = options;
  let client: pg.Client | undefined;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    const listener = new pg.Client({ connectionString: options.databaseUrl, application_name: options.applicationName });
    const lost = (error?: unknown) => {
      if (client !== listener) return;
      client = undefined;
      options.onLost?.();
      if (closed) return;
      log.warn({ err: error, channel }, 'LISTEN connection lost; reconnecting');
      void listener.end().catch(ignoreError('the connection is being replaced; its end may fail on a dead socket'));
      scheduleReconnect();
    };
    listener.on('notification', (message) => {
      if (message.channel === channel) options.onNotification(message.payload);
    });
    listener.on('error', lost);
    listener.on('end', () => lost());
    try {
      await listener.connect();
      await listener.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      void listener.end().catch(ignoreError('the connection is being replaced; its end may fail on a dead socket'));
      throw error;
    }
    if (closed) {
      void listener.end().catch(ignoreError('the connection is being replaced; its end may fail on a dead socket'));
      return;
    }
    client = listener;
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      connect()
        .then(() => options.onReconnected())
        .catch((error: unknown) => {
          log.warn({ err: error, channel }, 'LISTEN reconnect failed; retrying');
          scheduleReconnect();
        });
    }, options.reconnectMs ?? 1000);
    reconnectTimer.unref();
  }

  return {
    start: () =>
      connect().catch((error: unknown) => {
        if (options.retryStart) scheduleReconnect();
        throw error;
      }),
    get connected() {
      return client !== undefined;
    },
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      const current = client;
      client = undefined;
      await current?.end().catch(ignoreError('stopping: the connection may already be gone'));
    },
  };
}
