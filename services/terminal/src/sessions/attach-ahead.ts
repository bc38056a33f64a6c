// The first attach of a session this replica just started, made shorter: right after the start, the gateway opens
// the agent stream the browser's attach will use (or, when the recorder reads users' streams, asks the agent for
// the Authorization of one `GET /attach`, the challenge of agent/handshake.ts) while the start's answer travels to
// the browser and the browser opens its WebSocket; the attach then relays at once instead of upgrading to the
// agent first (the prompt is already waiting in that stream). Everything else of the attach is unchanged: the
// caller's checks, the backend's check of the address, the access watch, the audit. What is prepared is used once,
// for the address it was made for, and within USE_WITHIN_MS (a stream not used by then is closed; the agent keeps
// the nonce behind an authorization 30 s); at most one per session and MAX_WAITING in all, so the store is bounded.
import { ignoreError } from '@boxyard/kit';

const USE_WITHIN_MS = 20_000;
const MAX_WAITING = 1000;

interface Ahead<T> {
  address: string;
  value: Promise<T | undefined>;
  timer: NodeJS.Timeout;
}

export interface AttachAhead<T> {
  /** Prepares for the attach at `address` now; a failure is dropped (the attach then does it on its own). */
  prepare(sessionId: string, address: string, make: () => Promise<T>): void;
  /** What was prepared for this session at this address, once; undefined when nothing is (still) good. */
  take(sessionId: string, address: string): Promise<T | undefined>;
  /** Drops what was prepared for this session (its start failed): disposed of once it is made. */
  forget(sessionId: string): void;
  readonly size: number;
}

/** `dispose`: what to do with a prepared value nobody took (a stream is closed). */
export function createAttachAhead<T>(options: { useWithinMs?: number; max?: number; dispose?: (value: T) => void } = {}): AttachAhead<T> {
  const useWithinMs = options.useWithinMs ?? USE_WITHIN_MS;
  const max = options.max ?? MAX_WAITING;
  const waiting = new Map<string, Ahead<T>>();
  const drop = (sessionId: string) => {
    const ahead = waiting.get(sessionId);
    if (!ahead) return undefined;
    clearTimeout(ahead.timer);
    waiting.delete(sessionId);
    return ahead;
  };
  const discard = (ahead: Ahead<T> | undefined) => {
    if (ahead && options.dispose) void ahead.value.then((value) => value !== undefined && options.dispose!(value));
  };
  return {
    prepare(sessionId, address, make) {
      discard(drop(sessionId));
      if (waiting.size >= max) return;
      // Not awaited here: what fails or is late only means the attach does it on its own.
      const value = make().catch(ignoreError('the attach makes its own'));
      const timer = setTimeout(() => discard(drop(sessionId)), useWithinMs);
      timer.unref();
      waiting.set(sessionId, { address, value, timer });
    },
    async take(sessionId, address) {
      const ahead = drop(sessionId);
      if (!ahead) return undefined;
      if (ahead.address !== address) {
        discard(ahead);
        return undefined;
      }
      return ahead.value;
    },
    forget: (sessionId) => discard(drop(sessionId)),
    get size() {
      return waiting.size;
    },
  };
}
