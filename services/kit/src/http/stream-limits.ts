// Caps on long-lived connections (event streams, terminal WebSockets) of one replica: per holder (a user, a key,
// or an anonymous client's address) and in total, so that no one caller, and no crowd, can hold every socket and
// file descriptor of the process. Over a holder's cap: 429; over the total: 503 (a refusal, logged as info);
// both with Retry-After.
// Per replica on purpose: what runs out is this process's sockets and memory, and a count in PostgreSQL would
// outlive a crashed replica's connections.
import { HttpError } from './http-error.ts';

export interface StreamLimitsOptions {
  /** What the streams are, for the error message ("event streams"). */
  what: string;
  perHolder: number;
  total: number;
  /** Seconds suggested in Retry-After. */
  retryAfterSeconds?: number;
}

export interface StreamLimits {
  /** Takes a slot for `holder` or throws 429/503; the returned function gives it back (once, however often called). */
  claim(holder: string): () => void;
  /** Open streams in total and of `holder`. */
  open(holder?: string): number;
}

export function createStreamLimits(options: StreamLimitsOptions): StreamLimits {
  const byHolder = new Map<string, number>();
  let total = 0;
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  return {
    claim(holder) {
      const held = byHolder.get(holder) ?? 0;
      if (held >= options.perHolder) {
        throw new HttpError(429, `too many open ${options.what} for this caller (at most ${options.perHolder}); close one first`, {
          headers: { 'retry-after': retryAfter },
        });
      }
      if (total >= options.total) {
        throw new HttpError(503, `too many open ${options.what} on this server (at most ${options.total}); try again later`, {
          kind: 'throttled',
          headers: { 'retry-after': retryAfter },
        });
      }
      byHolder.set(holder, held + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (byHolder.get(holder) ?? 1) - 1;
        if (left <= 0) byHolder.delete(holder);
        else byHolder.set(holder, left);
      };
    },
    open(holder) {
      return holder === undefined ? total : (byHolder.get(holder) ?? 0);
    },
  };
}
