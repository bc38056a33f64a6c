// The agent's end of an attached stream, read and written as RFC 6455 frames by hand (ws/frames.ts) once `ws` has
// answered the upgrade. Why not `ws` itself: a keystroke's way through the agent is short (a frame in, a byte to
// the pty, its echo out in a frame) and `ws` added most of the JavaScript it ran: its receiver is a Writable stream
// and its sender corks and writes header and payload apart, and an agent sees too few keystrokes for V8 to compile
// that code optimised (an agent runs one shell: 10 keys/s stay in the interpreter and baseline code for minutes).
// Profiled on 50 typing sessions, `ws` was ~60 % of the agent's JavaScript per keystroke.
// What it keeps of the protocol: the gateway's frames must be masked and at most MAX_FRAME; text and binary
// messages (fragmented ones joined); ping answered, pong reported; the closing handshake both ways (our close frame,
// then the socket ends once theirs came or CLOSE_WAIT_MS passed); a protocol error closes with 1002/1009.
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { closePayload, encodeFrame, encodeHeader, FrameError, FrameScanner, OPCODE, parseClose, takeOverSocket, type CollectedFrame } from '../ws/frames.ts';

const CLOSE_WAIT_MS = 5000;
/** Smaller payloads are copied behind their header (one write); larger ones go as header + payload in one writev. */
const COPY_BELOW = 16_384;

/** Room left before a payload for frameInPlace: the longest header of an unmasked frame (8-byte length). */
export const FRAME_HEADER_ROOM = 10;

/**
 * The binary frame of the `length` payload bytes at FRAME_HEADER_ROOM in `buffer`: its header is written just before
 * them, and the frame is the view from there (no copy of the payload).
 */
export function frameInPlace(buffer: Buffer, length: number): Buffer {
  const extended = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  const start = FRAME_HEADER_ROOM - 2 - extended;
  buffer[start] = 0x80 | OPCODE.binary;
  buffer[start + 1] = extended === 0 ? length : extended === 2 ? 126 : 127;
  if (extended === 2) buffer.writeUInt16BE(length, start + 2);
  else if (extended === 8) buffer.writeBigUInt64BE(BigInt(length), start + 2);
  return buffer.subarray(start, FRAME_HEADER_ROOM + length);
}

/** What the session needs of an attached socket (the subset of ws's WebSocket it used, and sendFrame). */
export interface PeerSocket {
  send(data: Buffer | string, options?: { binary?: boolean }, done?: (error?: Error | null) => void): void;
  /** Writes a whole frame as it is (frameInPlace's); `done` once written (or failed): the frame may be reused then. */
  sendFrame(frame: Buffer, done: (error?: Error | null) => void): void;
  ping(): void;
  close(code: number, reason: string): void;
  terminate(): void;
  on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): this;
  on(event: 'close' | 'pong', listener: () => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
}

export class FramedSocket extends EventEmitter implements PeerSocket {
  readonly #socket: Duplex;
  readonly #scanner: FrameScanner;
  readonly #maxMessage: number;
  #fragments: Buffer[] = [];
  #fragmentBytes = 0;
  #fragmentOpcode = 0;
  #closeSent = false;
  #closeReceived = false;

  /** `socket`: the upgraded connection (ws's listeners on it are removed); `head`: bytes read with the upgrade. */
  constructor(socket: Duplex, maxMessage: number) {
    super();
    this.#socket = socket;
    this.#maxMessage = maxMessage;
    // Everything from the gateway is looked at here: its payload is unmasked and handed over.
    this.#scanner = new FrameScanner({ masked: true, action: () => 'collect', maxFrame: maxMessage, maxCollected: maxMessage });
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', (error: Error) => this.emit('error', error));
    socket.on('end', () => {
      this.#closeReceived = true;
      socket.end();
    });
    socket.on('close', () => this.emit('close'));
  }

  /** Takes the socket of a WebSocket `ws` has just upgraded (its own reading and writing stop). */
  static from(ws: object, maxMessage: number): FramedSocket {
    return new FramedSocket(takeOverSocket(ws), maxMessage);
  }

  send(data: Buffer | string, options?: { binary?: boolean }, done?: (error?: Error | null) => void): void {
    const binary = typeof data !== 'string' && options?.binary !== false;
    const payload = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.#closeSent || this.#socket.destroyed) {
      if (done) process.nextTick(done, new Error('the socket is closed'));
      return;
    }
    const opcode = binary ? OPCODE.binary : OPCODE.text;
    if (payload.length < COPY_BELOW) {
      this.#socket.write(encodeFrame(opcode, payload, false), done);
      return;
    }
    this.#socket.cork();
    this.#socket.write(encodeHeader(opcode, payload.length));
    this.#socket.write(payload, done);
    this.#socket.uncork();
  }

  sendFrame(frame: Buffer, done: (error?: Error | null) => void): void {
    if (this.#closeSent || this.#socket.destroyed) return void process.nextTick(done, new Error('the socket is closed'));
    this.#socket.write(frame, done);
  }

  ping(): void {
    this.#control(OPCODE.ping, Buffer.alloc(0));
  }

  /** Our closing handshake: the socket ends once their close frame came (or after CLOSE_WAIT_MS). */
  close(code: number, reason: string): void {
    if (this.#closeSent || this.#socket.destroyed) return;
    this.#closeSent = true;
    this.#socket.write(encodeFrame(OPCODE.close, closePayload(code, reason), false));
    if (this.#closeReceived) this.#socket.end();
    setTimeout(() => this.#socket.destroy(), CLOSE_WAIT_MS).unref();
  }

  terminate(): void {
    this.#socket.destroy();
  }

  #control(opcode: number, payload: Buffer): void {
    if (!this.#closeSent && !this.#socket.destroyed) this.#socket.write(encodeFrame(opcode, payload, false));
  }

  #read(chunk: Buffer): void {
    if (this.#closeReceived) return;
    let items;
    try {
      items = this.#scanner.scan(chunk);
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      return this.#fail(error.code, error.message);
    }
    for (const item of items) if ('frame' in item && !this.#closeReceived) this.#frame(item.frame);
  }

  #frame(frame: CollectedFrame): void {
    switch (frame.opcode) {
      case OPCODE.close: {
        this.#closeReceived = true;
        const { code } = parseClose(frame.payload);
        if (!this.#closeSent) {
          this.#closeSent = true;
          this.#socket.write(encodeFrame(OPCODE.close, code === 1005 ? Buffer.alloc(0) : frame.payload.subarray(0, 2), false));
        }
        this.#socket.end();
        return;
      }
      case OPCODE.ping:
        return this.#control(OPCODE.pong, frame.payload);
      case OPCODE.pong:
        this.emit('pong');
        return;
    }
    // A whole message at once (the usual case), or the fragments of one joined.
    if (frame.fin && this.#fragments.length === 0) {
      this.emit('message', frame.payload, frame.opcode === OPCODE.binary);
      return;
    }
    if (frame.opcode !== OPCODE.continuation) this.#fragmentOpcode = frame.opcode;
    this.#fragments.push(frame.payload);
    this.#fragmentBytes += frame.payload.length;
    if (this.#fragmentBytes > this.#maxMessage) return this.#fail(1009, 'message too large');
    if (!frame.fin) return;
    const whole = Buffer.concat(this.#fragments, this.#fragmentBytes);
    this.#fragments = [];
    this.#fragmentBytes = 0;
    this.emit('message', whole, this.#fragmentOpcode === OPCODE.binary);
  }

  /** A protocol error: nothing more is read; our close frame says why. */
  #fail(code: 1002 | 1009, reason: string): void {
    this.#closeReceived = true;
    this.#fragments = [];
    this.close(code, reason);
    this.#socket.end();
  }
}
