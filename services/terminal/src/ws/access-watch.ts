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
  end(ending: Ending): void;
}

export interface AccessWatchOptions {
  accounts: Pick<Accounts, 'revokedAmong' | 'activeAmong'>;
  /** Why this user may no longer use terminals (e.g. the backend refuses non-admins), or undefined. */
  refusal(user: { id: string; role: string }): string | undefined;
  recheckMs: number;
  log: { warn(object: unknown, message: string): void };
}

/** setTimeout's delay is a signed 32-bit count of ms; later expiries are caught by the periodic re-check. */
const MAX_TIMER_MS = 2_147_483_647;

export const ENDINGS = {
  signedOut: { code: CLOSE_CODES.sessionEnded, reason: 'session ended: signed out', message: 'Your session ended: you signed out. Sign in again to reattach.' },
  expired: { code: CLOSE_CODES.sessionEnded, reason: 'session ended: token expired', message: 'Your session ended: its token expired. Sign in again to reattach.' },
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

export function createAccessWatch(options: AccessWatchOptions) {
  const sockets = new Set<WatchedSocket>();
  const timers = new Map<WatchedSocket, NodeJS.Timeout>();
  let checking: Promise<void> | undefined;
  let again = false;

  const end = (socket: WatchedSocket, ending: Ending) => {
    if (!sockets.delete(socket)) return;
    clearTimeout(timers.get(socket));
    timers.delete(socket);
    socket.end(ending);
  };

  async function check(subset: WatchedSocket[]): Promise<void> {
    const live = subset.filter((socket) => sockets.has(socket));
    if (live.length === 0) return;
    const now = Date.now();
    for (const socket of live) if (socket.expiresAt.getTime() <= now) end(socket, ENDINGS.expired);
    const rest = live.filter((socket) => sockets.has(socket));
    const [revoked, users] = await Promise.all([
      options.accounts.revokedAmong([...new Set(rest.map((s) => s.jti))]),
      options.accounts.activeAmong([...new Set(rest.map((s) => s.userId))]),
    ]);
    for (const socket of rest) {
      if (revoked.has(socket.jti)) {
        end(socket, ENDINGS.signedOut);
        continue;
      }
      const user = users.get(socket.userId);
      if (!user) {
        end(socket, ENDINGS.accountGone);
        continue;
      }
      const refusal = options.refusal(user);
      if (refusal) end(socket, withdrawn(refusal));
    }
  }

  /** Re-checks everything; rounds that overlap coalesce into one more. */
  function checkAll(): Promise<void> {
    if (checking) {
      again = true;
      return checking;
    }
    checking = (async () => {
      do {
        again = false;
        await check([...sockets]);
      } while (again);
    })()
      .catch((error: unknown) => options.log.warn({ err: error }, 'terminal: re-checking attached sockets failed; retrying on the next round'))
      .finally(() => (checking = undefined));
    return checking;
  }

  const checkSome = (subset: WatchedSocket[]) =>
    void check(subset).catch((error: unknown) => options.log.warn({ err: error }, 'terminal: re-checking attached sockets failed; retrying on the next round'));

  const interval = setInterval(() => void checkAll(), options.recheckMs);
  interval.unref();

  return {
    /** Watches a socket until it is closed (call the returned function then). */
    register(socket: WatchedSocket): () => void {
      sockets.add(socket);
      const delay = socket.expiresAt.getTime() - Date.now();
      if (delay < MAX_TIMER_MS) {
        const timer = setTimeout(() => end(socket, ENDINGS.expired), Math.max(0, delay));
        timer.unref();
        timers.set(socket, timer);
      }
      // A sign-out between the upgrade's check and now would have had no socket to close.
      checkSome([socket]);
      return () => {
        sockets.delete(socket);
        clearTimeout(timers.get(socket));
        timers.delete(socket);
      };
    },

    onChange(change: AccountChange): void {
      if (change.kind === 'revoked') {
        for (const socket of [...sockets]) if (socket.jti === change.jti) end(socket, ENDINGS.signedOut);
      } else if (change.kind === 'user') {
        checkSome([...sockets].filter((socket) => socket.userId === change.id));
      } else if (change.kind === 'resync') {
        void checkAll();
      }
    },

    checkAll,
    get size() {
      return sockets.size;
    },

    close(): void {
      clearInterval(interval);
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      sockets.clear();
    },
  };
}

export type AccessWatch = ReturnType<typeof createAccessWatch>;
