// The shell's output on its way to every attached socket: batched into frames, and paced by the slowest socket.
import type { IPty } from 'node-pty';
import { FRAME_HEADER_ROOM, frameInPlace, type PeerSocket } from './framed-socket.ts';

/** Above this many bytes queued for one socket, the pty is paused until every socket is back under LOW_WATER. */
export const HIGH_WATER = 1_048_576;
export const LOW_WATER = 262_144;
const MAX_BATCH = 65_536;
const BULK_READ = 2048;
const BULK_WAIT_MS = 2;
/** Frames whose every write has completed, kept for the next batches (each MAX_BATCH + its header). */
const SPARE_FRAMES = 4;

/** One attached socket. */
export interface Peer {
  socket: PeerSocket;
  queued: number;
  alive: boolean;
}

/**
 * Output goes out in frames as large as the shell's pace allows (fewer, larger frames: a flood costs less per byte),
 * flushed before anything else is sent so the order never changes. A pty hands out at most ~4 KiB per read, and a
 * reader gets one read per turn of the event loop: so when a read looks like bulk output (BULK_READ or more) the
 * frame waits BULK_WAIT_MS for more (up to MAX_BATCH), which made a flood ~16 times fewer frames. A small read
 * (an echoed keystroke, a prompt) with no bulk output waiting goes out at once, from the read's callback: being the
 * turn's only read, waiting for the turn's end (setImmediate) batched nothing and cost a callback of its own.
 * Each read is copied once, into the frame being filled behind room for its header: the frame goes to every
 * socket as it is (one write each, no joining of chunks), and is filled again once every write of it completed.
 */
export class OutputFanout {
  readonly peers = new Set<Peer>();
  /** The gateway's recorder (not a user's socket: not counted as attached); paced like any socket. */
  readonly observers = new Set<Peer>();
  readonly #term: IPty;
  #paused = false;
  #frame: Buffer | undefined;
  #fill = 0;
  readonly #spare: Buffer[] = [];
  #flushTimer: NodeJS.Timeout | undefined;

  constructor(term: IPty) {
    this.#term = term;
  }

  /** Output read from the pty (the first `length` bytes of `data`, copied), for the sockets attached now. */
  push(data: Buffer, length = data.length): void {
    if (length === 0 || (this.peers.size === 0 && this.observers.size === 0)) return;
    if (this.#fill + length > MAX_BATCH) {
      this.flush();
      if (length > MAX_BATCH) return this.#broadcast(Buffer.from(data.subarray(0, length)));
    }
    const frame = (this.#frame ??= this.#spare.pop() ?? Buffer.allocUnsafeSlow(FRAME_HEADER_ROOM + MAX_BATCH));
    data.copy(frame, FRAME_HEADER_ROOM + this.#fill, 0, length);
    this.#fill += length;
    if (this.#fill === MAX_BATCH) this.flush();
    else if (!this.#flushTimer) {
      if (length >= BULK_READ) this.#flushTimer = setTimeout(() => this.flush(), BULK_WAIT_MS);
      else this.flush();
    }
  }

  /** Sends the batch now: before anything else goes to a socket, so the order never changes. */
  flush(): void {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const frame = this.#frame;
    const length = this.#fill;
    if (!frame || length === 0) return;
    this.#frame = undefined;
    this.#fill = 0;
    const message = frameInPlace(frame, length);
    let writes = this.peers.size + this.observers.size;
    if (writes === 0) return void this.#spare.push(frame);
    const written = () => {
      if (--writes === 0 && this.#spare.length < SPARE_FRAMES) this.#spare.push(frame);
    };
    for (const peer of this.peers) this.#sendFrame(peer, message, length, written);
    for (const observer of this.observers) this.#sendFrame(observer, message, length, written);
  }

  /** A payload of its own (larger than a batch): to every socket. */
  #broadcast(data: Buffer): void {
    for (const peer of this.peers) this.send(peer, data);
    for (const observer of this.observers) this.send(observer, data);
  }

  send(peer: Peer, data: Buffer): void {
    peer.queued += data.length;
    peer.socket.send(data, { binary: true }, () => {
      peer.queued -= data.length;
      this.resumeIfDrained();
    });
    this.#paceBy(peer);
  }

  #sendFrame(peer: Peer, message: Buffer, length: number, written: () => void): void {
    peer.queued += length;
    peer.socket.sendFrame(message, () => {
      peer.queued -= length;
      written();
      this.resumeIfDrained();
    });
    this.#paceBy(peer);
  }

  #paceBy(peer: Peer): void {
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
