// An attached socket was authorised once, at the upgrade; this keeps that authorisation true for as long as it
// stays open. Each socket is registered with the credential it came with (session jti or provider token id, its
// expiry, its user) and is closed:
//   4401 "session ended: signed out"   its session was revoked (sign-out on any replica)
//   4401 "session ended: token expired" at the expiry of its session token or provider token (a timer)
//   4403 "access withdrawn: ..."        its account was disabled or deleted, or lost what terminals need here
// Sign-outs and account changes arrive at once through the account watch (PostgreSQL LISTEN/NOTIFY, so from any
// replica); a periodic re-check of every registered socket (two queries per round, whatever their number) bounds
// what a missed notification could cost, and runs after the LISTEN connection comes back.
import type { AccountChange, Accounts } from '@boxyard/kit';
import { CLOSE_CODES } from '../protocol.ts';

export interface Ending {
  code: number;
  /** The close frame's reason (at most 123 bytes). */
  reason: string;
  /** Said to the client in an `error` control message before the close. */
  message: string;
}

export interface WatchedSocket {
  jti: string;
  userId: string;
  expiresAt: Date;
  /** The session's backend resource, when the backend's refusal depends on it (a local shell run as the server). */
  resource?: string | null;
  end(ending: Ending): void;
}

export interface AccessWatchOptions {
  accounts: Pick<Accounts, 'revokedAmong' | 'activeAmong'>;
  /** Why this user may no longer use terminals (e.g. the backend refuses non-admins), or undefined. */
  refusal(user: { id: string; role: string }, session?: { resource: string | null }): string | undefined;
  recheckMs: number;
  log: { warn(object: unknown, message: string): void };
}

/** setTimeout's delay is a signed 32-bit count of ms; later expiries are caught by the periodic re-check. */
const MAX_TIMER_MS = 2_147_483_647;

export const ENDINGS = {
  signedOut: { code: CLOSE_CODES.sessionEnded, reason: 'session ended: signed out', message: 'Your session ended: you signed out. Sign in again to reattach.' },
  expired: {
    code: CLOSE_CODES.sessionEnded,
    reason: 'session ended: token expired',
    message: 'Your session ended: its token expired. Sign in again to reattach.',
  },
  accountGone: {
    code: CLOSE_CODES.accessWithdrawn,
    reason: 'access withdrawn: account disabled or deleted',
    message: 'Access withdrawn: your account was disabled or deleted.',
  },
} as const satisfies Record<string, Ending>;

export function withdrawn(why: string): Ending {
  const reason = `access withdrawn: ${why}`;
  // Close reasons are limited to 123 bytes; the message carries the whole text.
  return { code: CLOSE_CODES.accessWithdrawn, reason: Buffer.byteLength(reason) > 123 ? 'access withdrawn' : reason, message: `Access withdrawn: ${why}` };
}

/** The watched sockets, their expiry timers, and the re-check round under way (with whether another is due). */
interface Watch {
  options: AccessWatchOptions;
  sockets: Set<WatchedSocket>;
  timers: Map<WatchedSocket, NodeJS.Timeout>;
  checking: Promise<void> | undefined;
  again: boolean;
}

export function createAccessWatch(options: AccessWatchOptions) {
  const watch: Watch = { options, sockets: new Set(), timers: new Map(), checking: undefined, again: false };
  const interval = setInterval(() => void checkAll(watch), options.recheckMs);
  interval.unref();

  return {
    /** Watches a socket until it is closed (call the returned function then). */
    register: (socket: WatchedSocket): (() => void) => register(watch, socket),
    onChange: (change: AccountChange): void => onChange(watch, change),
    checkAll: (): Promise<void> => checkAll(watch),
    get size() {
      return watch.sockets.size;
    },

    close(): void {
      clearInterval(interval);
      for (const timer of watch.timers.values()) clearTimeout(timer);
      watch.timers.clear();
      watch.sockets.clear();
    },
  };
}

export type AccessWatch = ReturnType<typeof createAccessWatch>;

function forget({ sockets, timers }: Watch, socket: WatchedSocket): boolean {
  const watched = sockets.delete(socket);
  clearTimeout(timers.get(socket));
  timers.delete(socket);
  return watched;
}

function end(watch: Watch, socket: WatchedSocket, ending: Ending): void {
  if (!watch.sockets.has(socket)) return;
  forget(watch, socket);
  socket.end(ending);
}

function register(watch: Watch, socket: WatchedSocket): () => void {
  watch.sockets.add(socket);
  const delay = socket.expiresAt.getTime() - Date.now();
  if (delay < MAX_TIMER_MS) {
    const timer = setTimeout(() => end(watch, socket, ENDINGS.expired), Math.max(0, delay));
    timer.unref();
    watch.timers.set(socket, timer);
  }
  // A sign-out between the upgrade's check and now would have had no socket to close.
  checkSome(watch, [socket]);
  return () => void forget(watch, socket);
}

function onChange(watch: Watch, change: AccountChange): void {
  if (change.kind === 'revoked') {
    for (const socket of [...watch.sockets]) if (socket.jti === change.jti) end(watch, socket, ENDINGS.signedOut);
  } else if (change.kind === 'user') {
    checkSome(
      watch,
      [...watch.sockets].filter((socket) => socket.userId === change.id),
    );
  } else if (change.kind === 'resync') {
    void checkAll(watch);
  }
}

async function check(watch: Watch, subset: WatchedSocket[]): Promise<void> {
  const { sockets, options } = watch;
  const live = subset.filter((socket) => sockets.has(socket));
  if (live.length === 0) return;
  const now = Date.now();
  for (const socket of live) if (socket.expiresAt.getTime() <= now) end(watch, socket, ENDINGS.expired);
  const rest = live.filter((socket) => sockets.has(socket));
  const [revoked, users] = await Promise.all([
    options.accounts.revokedAmong([...new Set(rest.map((s) => s.jti))]),
    options.accounts.activeAmong([...new Set(rest.map((s) => s.userId))]),
  ]);
  for (const socket of rest) {
    if (revoked.has(socket.jti)) {
      end(watch, socket, ENDINGS.signedOut);
      continue;
    }
    const user = users.get(socket.userId);
    if (!user) {
      end(watch, socket, ENDINGS.accountGone);
      continue;
    }
    const refusal = options.refusal(user, socket.resource === undefined ? undefined : { resource: socket.resource });
    if (refusal) end(watch, socket, withdrawn(refusal));
  }
}

/** Re-checks everything; rounds that overlap coalesce into one more. */
function checkAll(watch: Watch): Promise<void> {
  if (watch.checking) {
    watch.again = true;
    return watch.checking;
  }
  watch.checking = (async () => {
    do {
      watch.again = false;
      await check(watch, [...watch.sockets]);
    } while (watch.again);
  })()
    .catch((error: unknown) => watch.options.log.warn({ err: error }, 'terminal: re-checking attached sockets failed; retrying on the next round'))
    .finally(() => (watch.checking = undefined));
  return watch.checking;
}

function checkSome(watch: Watch, subset: WatchedSocket[]): void {
  void check(watch, subset).catch((error: unknown) =>
    watch.options.log.warn({ err: error }, 'terminal: re-checking attached sockets failed; retrying on the next round'),
  );
}
