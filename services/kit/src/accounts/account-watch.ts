// Tells long-lived connections (terminal sockets, event streams) that a credential they were opened with may
// have changed: a session was revoked (sign-out on any replica), or a user's role, disabled state or existence
// changed (the triggers of migration 0002), or whatever a service's own triggers send on the same channel (the
// file share: API keys). One dedicated LISTEN connection per process; after a lost connection it reconnects and
// reports `resync`, since notifications sent meanwhile are gone: listeners then re-check everything they hold.
// Listeners must also re-check on their own now and then (notifications are a fast path, not the only one).
import pg from 'pg';

export type AccountChange =
  | { kind: 'revoked'; jti: string }
  | { kind: 'user'; id: string }
  | { kind: 'key'; id: string }
  | { kind: 'resync' };

export type AccountChangeListener = (change: AccountChange) => void;

export interface AccountWatchOptions {
  /** Connection URL; the LISTEN connection needs no search_path. */
  databaseUrl: string;
  /** The service's schema: the channel is `boxyard_accounts:<schema>`. */
  schema: string;
  log: { warn(object: unknown, message: string): void };
  /** Delay before reconnecting a lost connection. */
  reconnectMs?: number;
}

export interface AccountWatch {
  start(): Promise<void>;
  subscribe(listener: AccountChangeListener): () => void;
  close(): Promise<void>;
}

export const accountChannel = (schema: string) => `boxyard_accounts:${schema}`;

function parseChange(payload: string | undefined): AccountChange | undefined {
  try {
    const value = JSON.parse(payload ?? '') as Record<string, unknown>;
    if (value.kind === 'revoked' && typeof value.jti === 'string') return { kind: 'revoked', jti: value.jti };
    if ((value.kind === 'user' || value.kind === 'key') && typeof value.id === 'string') return { kind: value.kind, id: value.id };
  } catch {
    // not ours
  }
  return undefined;
}

export function createAccountWatch(options: AccountWatchOptions): AccountWatch {
  const listeners = new Set<AccountChangeListener>();
  const channel = accountChannel(options.schema);
  let client: pg.Client | undefined;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | undefined;

  const emit = (change: AccountChange) => {
    for (const listener of listeners) {
      try {
        listener(change);
      } catch (error) {
        options.log.warn({ err: error }, 'account change listener failed');
      }
    }
  };

  async function connect(): Promise<void> {
    const listener = new pg.Client({ connectionString: options.databaseUrl, application_name: `boxyard-account-watch-${options.schema}` });
    const lost = (error?: unknown) => {
      if (client !== listener) return;
      client = undefined;
      if (closed) return;
      options.log.warn({ err: error }, 'account watch connection lost; reconnecting');
      void listener.end().catch(() => {});
      scheduleReconnect();
    };
    listener.on('notification', (message) => {
      if (message.channel !== channel) return;
      const change = parseChange(message.payload);
      if (change) emit(change);
    });
    listener.on('error', lost);
    listener.on('end', () => lost());
    try {
      await listener.connect();
      await listener.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      void listener.end().catch(() => {});
      throw error;
    }
    client = listener;
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      connect()
        .then(() => emit({ kind: 'resync' }))
        .catch((error: unknown) => {
          options.log.warn({ err: error }, 'account watch reconnect failed; retrying');
          scheduleReconnect();
        });
    }, options.reconnectMs ?? 1000);
    reconnectTimer.unref();
  }

  return {
    start: () => connect(),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      listeners.clear();
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}
