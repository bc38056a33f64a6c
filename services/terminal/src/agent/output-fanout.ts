// The shell's output on its way to every attached socket: batched into frames, and paced by the slowest socket.
import type { IPty } from 'node-pty';
import type { PeerSocket } from './framed-socket.ts';

/** Above this many bytes queued for one socket, the pty is paused until every socket is back under LOW_WATER. */
export const HIGH_WATER = 1_048_576;
export const LOW_WATER = 262_144;
const MAX_BATCH = 65_536;
const BULK_READ = 2048;
const BULK_WAIT_MS = 2;

/** One attached socket. */
export interface Peer {
  socket: PeerSocket;
  queued: number;
  alive: boolean;
}

/**
 * Output read from the pty in one turn of the event loop goes out as one frame (fewer, larger frames: a
 * flood costs less per byte), flushed before anything else is sent so the order never changes. A pty hands
 * out at most ~4 KiB per read, and a fast reader gets one read per turn: so when a read looks like bulk output
 * (BULK_READ or more) the frame waits BULK_WAIT_MS for more (up to MAX_BATCH), which made a flood ~16 times
 * fewer frames. Small reads (echoed keystrokes, prompts) still go out in the same turn.
 */
export class OutputFanout {
  readonly peers = new Set<Peer>();
  /** The gateway's recorder (not a user's socket: not counted as attached); paced like any socket. */
  readonly observers = new Set<Peer>();
  readonly #term: IPty;
  #paused = false;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #flushScheduled = false;
  #flushTimer: NodeJS.Timeout | undefined;

  constructor(term: IPty) {
    this.#term = term;
  }

  /** Output read from the pty, for the sockets attached now. */
  push(data: Buffer): void {
    if (this.peers.size === 0 && this.observers.size === 0) return;
    this.#pending.push(data);
    this.#pendingBytes += data.length;
    if (this.#pendingBytes >= MAX_BATCH) this.flush();
    else if (data.length >= BULK_READ && !this.#flushTimer) {
      this.#flushScheduled = true;
      this.#flushTimer = setTimeout(() => this.flush(), BULK_WAIT_MS);
    } else if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Sends the batch now: before anything else goes to a socket, so the order never changes. */
  flush(): void {
    this.#flushScheduled = false;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#pendingBytes === 0) return;
    const data = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending, this.#pendingBytes);
    this.#pending = [];
    this.#pendingBytes = 0;
    for (const peer of this.peers) this.send(peer, data);
    for (const observer of this.observers) this.send(observer, data);
  }

  send(peer: Peer, data: Buffer): void {
    peer.queued += data.length;
    peer.socket.send(data, { binary: true }, () => {
      peer.queued -= data.length;
      this.resumeIfDrained();
    });
    if (peer.queued > HIGH_WATER && !this.#paused) {
      // The slowest socket sets the pace: the pty stops being read, so the shell's writes block.
      this.#paused = true;
      this.#term.pause();
    }
  }

  resumeIfDrained(): void {
    if (this.#paused && [...this.peers, ...this.observers].every((peer) => peer.queued < LOW_WATER)) {
      this.#paused = false;
      this.#term.resume();
    }
  }
}
