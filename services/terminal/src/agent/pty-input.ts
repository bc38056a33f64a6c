// Keystrokes into the pty without a thread hop. node-pty's write queues every write on libuv's thread pool
// (fs.write, then a wake-up of the event loop when it is done): a keystroke's echo waited for two thread
// hand-offs. The pty's master is non-blocking and a keystroke fits its buffer, so a synchronous write finishes
// at once; only what the kernel does not take (a long paste into a busy program) is queued and retried in order.
// node-pty closes the master when the shell's side goes away (before its onExit fires) and marks the terminal
// unwritable in the same turn: after that, the descriptor's number may already belong to another file, so
// nothing is written to it again.
import { writeSync } from 'node:fs';
import type { IPty } from 'node-pty';

export interface PtyInput {
  write(data: Buffer): void;
  /** Bytes waiting for the pty to take them. */
  readonly queued: number;
  dispose(): void;
}

const RETRY_MS = 1;

/** `onError`: a write failed for another reason than a full pty; what was queued is dropped. */
export function createPtyInput(term: IPty, onError: (error: Error) => void): PtyInput {
  const unix = term as IPty & { fd?: number; _writable?: boolean };
  const fd = unix.fd;
  if (typeof fd !== 'number') return { write: (data) => term.write(data), queued: 0, dispose: () => {} }; // not a Unix pty
  const queue: Buffer[] = [];
  let queuedBytes = 0;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  const close = () => {
    closed = true;
    if (retry) clearTimeout(retry);
    queue.length = 0;
    queuedBytes = 0;
  };
  term.onExit(close);

  /** Writes what it can of `data`; returns the rest (empty when all was taken). */
  const writeSome = (data: Buffer): Buffer | undefined => {
    if (unix._writable === false) {
      close();
      return undefined;
    }
    try {
      const written = writeSync(fd, data);
      return written < data.length ? data.subarray(written) : undefined;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return data;
      // The pty failed: what is queued can never be delivered.
      close();
      onError(error as Error);
      return undefined;
    }
  };

  const drain = () => {
    retry = undefined;
    while (queue.length > 0 && !closed) {
      const head = queue[0]!;
      const rest = writeSome(head);
      if (closed) return;
      queuedBytes -= head.length - (rest?.length ?? 0);
      if (rest) {
        queue[0] = rest;
        retry = setTimeout(drain, RETRY_MS);
        return;
      }
      queue.shift();
    }
  };

  return {
    write(data) {
      if (closed || data.length === 0) return;
      if (queue.length > 0) {
        queue.push(data);
        queuedBytes += data.length;
        return;
      }
      const rest = writeSome(data);
      if (!rest) return;
      queue.push(rest);
      queuedBytes += rest.length;
      retry = setTimeout(drain, RETRY_MS);
    },
    get queued() {
      return queuedBytes;
    },
    dispose: close,
  };
}
