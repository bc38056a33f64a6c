// The first attach of a session this replica just started, made shorter: right after the start, the gateway asks
// the agent for the Authorization of one `GET /attach` (the challenge of agent/handshake.ts) while the start's
// answer travels to the browser and the browser opens its WebSocket; the attach then upgrades at once instead of
// running the challenge first (one round trip to the agent fewer on the way to the first prompt). Everything else
// of the attach is unchanged: the caller's checks, the backend's check of the address, the upgrade the agent
// checks. An authorization is used once, for the address it was made for, and within USE_WITHIN_MS (the agent
// keeps the nonce behind it 30 s); at most one per session and MAX_WAITING in all, so the store is bounded.
import { ignoreError } from '@boxyard/kit';

const USE_WITHIN_MS = 20_000;
const MAX_WAITING = 1000;

interface Ahead {
  address: string;
  authorization: Promise<string | undefined>;
  timer: NodeJS.Timeout;
}

export interface AttachAhead {
  /** Asks the agent at `address` now; a failure is dropped (the attach challenges on its own). */
  prepare(sessionId: string, address: string, authorize: () => Promise<string>): void;
  /** The authorization asked for this session at this address, once; undefined when none is (still) good. */
  take(sessionId: string, address: string): Promise<string | undefined>;
  readonly size: number;
}

export function createAttachAhead(options: { useWithinMs?: number; max?: number } = {}): AttachAhead {
  const useWithinMs = options.useWithinMs ?? USE_WITHIN_MS;
  const max = options.max ?? MAX_WAITING;
  const waiting = new Map<string, Ahead>();
  const drop = (sessionId: string) => {
    const ahead = waiting.get(sessionId);
    if (!ahead) return undefined;
    clearTimeout(ahead.timer);
    waiting.delete(sessionId);
    return ahead;
  };
  return {
    prepare(sessionId, address, authorize) {
      drop(sessionId);
      if (waiting.size >= max) return;
      // Not awaited here: a challenge that fails or is late only means the attach makes its own.
      const authorization = authorize().catch(ignoreError('the attach makes its own challenge'));
      const timer = setTimeout(() => drop(sessionId), useWithinMs);
      timer.unref();
      waiting.set(sessionId, { address, authorization, timer });
    },
    async take(sessionId, address) {
      const ahead = drop(sessionId);
      if (!ahead || ahead.address !== address) return undefined;
      return ahead.authorization;
    },
    get size() {
      return waiting.size;
    },
  };
}
