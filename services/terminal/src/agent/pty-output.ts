// The shell's output read from the pty into one reused buffer. node-pty reads its pty through a tty.ReadStream: every
// read (a pty hands out at most ~4 KiB) became a new Buffer (a 64 KiB block allocated, then the bytes copied into
// one of their size), pushed through the stream's machinery and two event emitters. In an output flood that was
// ~280,000 Buffers per GiB: the allocations, the JavaScript per read and the garbage collections they caused (a
// mark-compact every ~16 MiB, as the Buffers' memory counts toward the heap's limit: node-flags) were most of the
// agent's CPU above the kernel's own work of reading. Node's stream sockets can instead read into a buffer of the
// caller's (net.Socket's `onread`, which tty.ReadStream passes on): node-pty's stream is created that way here,
// and the consumer copies what it keeps (scrollback.ts, output-fanout.ts). Everything else of node-pty's stream
// stays as it was: pause/resume, the end of the shell (EIO), node-pty's exit and close events.
import tty from 'node:tty';
import type { IPty } from 'node-pty';

/** libuv reads up to this much at once (a pty gives less; other kinds of terminal could give more). */
const READ_BUFFER_BYTES = 65_536;

/** Gets each read: `data` holds it in its first `length` bytes until the call returns (then it is reused). */
export type OutputSink = (data: Buffer, length: number) => void;

export interface PtyOutput {
  /** Where reads go; set by the session right after the shell starts (reading starts a tick later). */
  sink: OutputSink;
  /** node-pty's stream reads into the reused buffer (else its `data` events feed the sink, one Buffer a read). */
  readonly direct: boolean;
}

type ReadStreamConstructor = new (fd: number, options?: Record<string, unknown>) => tty.ReadStream;

/**
 * Runs `spawn` (node-pty's spawn, synchronous) with tty.ReadStream standing for one that reads into a reused
 * buffer, for the stream node-pty creates on the pty. A node-pty that made its stream otherwise is read through its
 * `data` events, as before.
 */
export function spawnWithOutput(spawn: () => IPty): { term: IPty; output: PtyOutput } {
  const buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  const output: { sink: OutputSink; direct: boolean } = { sink: () => {}, direct: false };
  const module = tty as unknown as { ReadStream: ReadStreamConstructor };
  const original = module.ReadStream;
  function ReadStream(fd: number, options?: Record<string, unknown>): tty.ReadStream {
    output.direct = true;
    return new original(fd, { ...options, onread: { buffer, callback: (length: number) => output.sink(buffer, length) } });
  }
  module.ReadStream = ReadStream as unknown as ReadStreamConstructor;
  let term: IPty;
  try {
    term = spawn();
  } finally {
    module.ReadStream = original;
  }
  if (!output.direct) term.onData((chunk) => output.sink(chunk as unknown as Buffer, chunk.length));
  return { term, output };
}
