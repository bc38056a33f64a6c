// A reconnecting LISTEN on one PostgreSQL channel, for caches that other replicas' commits invalidate. One
// dedicated connection; `connected` says whether notifications are flowing right now. After a lost connection it
// reconnects and calls `onResync` first, since notifications sent meanwhile are gone: a cache then drops
// everything it holds. Unlike listen-connection.ts it reports the loss itself (a cache must stop trusting what it holds
// at once, not only after the reconnect) and keeps retrying when the first connect fails.
import pg from 'pg';

export interface ChannelListenerOptions {
  databaseUrl: string;
  channel: string;
  log: { warn(object: unknown, message: string): void };
  onNotification(payload: string): void;
  /** Called when notifications may have been missed: on losing the connection and again once it is back. */
  onResync(): void;
  reconnectMs?: number;
}

export interface ChannelListener {
  start(): Promise<void>;
  readonly connected: boolean;
  close(): Promise<void>;
}

export function createChannelListener(options: ChannelListenerOptions): ChannelListener {
  let client: pg.Client | undefined;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    const listener = new pg.Client({ connectionString: options.databaseUrl, application_name: `boxyard-listen-${options.channel}`.slice(0, 63) });
    const lost = (error?: unknown) => {
      if (client !== listener) return;
      client = undefined;
      options.onResync();
      if (closed) return;
      options.log.warn({ err: error }, `LISTEN ${options.channel}: connection lost; reconnecting`);
      void listener.end().catch(() => {});
      scheduleReconnect();
    };
    listener.on('notification', (message) => {
      if (message.channel === options.channel) options.onNotification(message.payload ?? '');
    });
    listener.on('error', lost);
    listener.on('end', () => lost());
    try {
      await listener.connect();
      await listener.query(`listen ${pg.escapeIdentifier(options.channel)}`);
    } catch (error) {
      void listener.end().catch(() => {});
      throw error;
    }
    client = listener;
    options.onResync(); // whatever was cached before this connection listened may be stale
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      connect().catch((error: unknown) => {
        options.log.warn({ err: error }, `LISTEN ${options.channel}: reconnect failed; retrying`);
        scheduleReconnect();
      });
    }, options.reconnectMs ?? 1000);
    reconnectTimer.unref();
  }

  return {
    start: () => connect().catch((error: unknown) => {
      scheduleReconnect();
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
      await current?.end().catch(() => {});
    },
  };
}
