// Tells long-lived connections (terminal sockets, event streams) that a credential they were opened with may
// have changed: a session was revoked (sign-out on any replica), or a user's role, disabled state or existence
// changed (the triggers of migration 0002), or whatever a service's own triggers send on the same channel (the
// file share: API keys). One dedicated LISTEN connection per process; after a lost connection it reconnects and
// reports `resync`, since notifications sent meanwhile are gone: listeners then re-check everything they hold.
// Listeners must also re-check on their own now and then (notifications are a fast path, not the only one).
import { createListenConnection } from '../db/listen-connection.ts';

export type AccountChange = { kind: 'revoked'; jti: string } | { kind: 'user'; id: string } | { kind: 'key'; id: string } | { kind: 'resync' };

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

  const emit = (change: AccountChange) => {
    for (const listener of listeners) {
      try {
        listener(change);
      } catch (error) {
        options.log.warn({ err: error }, 'account change listener failed');
      }
    }
  };

  const connection = createListenConnection({
    databaseUrl: options.databaseUrl,
    channel: accountChannel(options.schema),
    applicationName: `boxyard-account-watch-${options.schema}`,
    log: options.log,
    reconnectMs: options.reconnectMs,
    onNotification: (payload) => {
      const change = parseChange(payload);
      if (change) emit(change);
    },
    onReconnected: () => emit({ kind: 'resync' }),
  });

  return {
    start: () => connection.start(),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      await connection.close();
    },
  };
}
