// WebSocket frames (RFC 6455 section 5) read and written without decoding the data, for the gateway's relay
// (proxy.ts). The browser's frames to the gateway are masked client frames and so are the gateway's frames to the
// agent; the agent's frames to the gateway are unmasked server frames and so are the gateway's to the browser. So a
// terminal data frame is valid on the next hop exactly as it came: the relay forwards its bytes (whole socket reads,
// not frame by frame) and only holds back the frames it has to look at (control messages, ping/pong/close).
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';

export const OPCODE = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** A WebSocket protocol error: the close code to end the connection with (1002 protocol error, 1009 too big). */
export class FrameError extends Error {
  override name = 'FrameError';
  readonly code: 1002 | 1009;
  constructor(code: 1002 | 1009, message: string) {
    super(message);
    this.code = code;
  }
}

/** Writes the header of a final frame of `length` payload bytes at the start of `frame`; the header's size. */
function writeHeader(frame: Buffer, opcode: number, length: number, mask: boolean): number {
  const extended = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  frame[0] = 0x80 | opcode;
  frame[1] = (mask ? 0x80 : 0) | (extended === 0 ? length : extended === 2 ? 126 : 127);
  if (extended === 2) frame.writeUInt16BE(length, 2);
  else if (extended === 8) frame.writeBigUInt64BE(BigInt(length), 2);
  return 2 + extended + (mask ? 4 : 0);
}

const headerSize = (length: number, mask: boolean) => 2 + (length < 126 ? 0 : length < 65_536 ? 2 : 8) + (mask ? 4 : 0);

/** The header of an unmasked final frame (a server's), for a payload written after it. */
export function encodeHeader(opcode: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(headerSize(length, false));
  writeHeader(header, opcode, length, false);
  return header;
}

/** One whole frame, masked (what a client sends) or not (what a server sends). */
export function encodeFrame(opcode: number, payload: Buffer, mask: boolean): Buffer {
  const length = payload.length;
  const frame = Buffer.allocUnsafe(headerSize(length, mask) + length);
  const start = writeHeader(frame, opcode, length, mask);
  if (!mask) {
    payload.copy(frame, start);
    return frame;
  }
  const key = randomBytes(4);
  key.copy(frame, start - 4);
  for (let i = 0; i < length; i++) frame[start + i] = payload[i]! ^ key[i & 3]!;
  return frame;
}

/** ws's listeners on the socket of a WebSocket it upgraded; they go when a relay takes the socket over. */
const WS_LISTENERS = new Map([
  ['data', 'socketOnData'],
  ['end', 'socketOnEnd'],
  ['close', 'socketOnClose'],
  ['error', 'socketOnError'],
]);

/**
 * The socket under a `ws` WebSocket that has read nothing yet (upgraded, its listeners just added): from here on the
 * caller reads and writes it, as frames of this file. Other listeners (a socket slot's release) stay.
 */
export function takeOverSocket(ws: object): Duplex {
  const socket = (ws as { _socket: Duplex })._socket;
  for (const [event, name] of WS_LISTENERS)
    for (const listener of socket.listeners(event)) if ((listener as { name?: string }).name === name) socket.removeListener(event, listener as never);
  return socket;
}

/** A close frame's payload: the code and a reason cut to the 123 bytes a control frame leaves (ours are ASCII). */
export function closePayload(code: number, reason: string): Buffer {
  const text = Buffer.from(reason.slice(0, 123));
  const payload = Buffer.allocUnsafe(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return payload;
}

/** 1005: the close frame had no code. */
export const parseClose = (payload: Buffer): { code: number; reason: string } =>
  payload.length < 2 ? { code: 1005, reason: '' } : { code: payload.readUInt16BE(0), reason: payload.subarray(2).toString('utf8') };

/** What the scanner does with a frame: pass its bytes on, pass them on and hand over the payload, or hold it back. */
export type FrameAction = 'forward' | 'tap' | 'collect';

/** A frame held back, its payload unmasked. */
export interface CollectedFrame {
  opcode: number;
  fin: boolean;
  payload: Buffer;
}

/** In stream order: bytes to pass on, the payload of a tapped frame (part of bytes passed on), a frame held back. */
export type ScanItem = { forward: Buffer } | { tapped: Buffer } | { frame: CollectedFrame };

export interface ScanPolicy {
  /** Frames from a client must be masked, frames from a server must not. */
  masked: boolean;
  /** `messageOpcode`: text or binary, the message a continuation frame (opcode 0) belongs to. */
  action(opcode: number, messageOpcode: number): FrameAction;
  /** Largest payload of one frame (any frame), and of a held-back one. */
  maxFrame: number;
  maxCollected: number;
}

interface Frame {
  opcode: number;
  fin: boolean;
  action: FrameAction;
  key: Buffer | undefined;
  /** Payload bytes not yet seen. */
  remaining: number;
  /** Held-back payload seen so far, and its length (the mask's position). */
  parts: Buffer[];
  seen: number;
}

const isControl = (opcode: number) => opcode >= 8;

/**
 * Finds the frame boundaries in a byte stream, one socket read at a time. A read that is all forwarded frames comes
 * back as the same buffer (no copy); an incomplete header waits for the next read.
 */
export class FrameScanner {
  readonly #policy: ScanPolicy;
  #pending: Buffer | undefined;
  #frame: Frame | undefined;
  /** Opcode of the fragmented message under way (0: none). */
  #message = 0;

  constructor(policy: ScanPolicy) {
    this.#policy = policy;
  }

  /** Throws FrameError on a frame this connection must not carry. */
  scan(read: Buffer): ScanItem[] {
    const chunk = this.#pending ? Buffer.concat([this.#pending, read]) : read;
    this.#pending = undefined;
    const items: ScanItem[] = [];
    // Start of the bytes to pass on not yet handed out; -1 while inside a held-back frame.
    let forwardFrom = this.#frame?.action === 'collect' ? -1 : 0;
    let at = 0;
    while (at < chunk.length) {
      let frame = this.#frame;
      if (!frame) {
        const header = this.#header(chunk, at);
        if (!header) {
          // An incomplete header: its bytes go on (or not) with the rest of the frame.
          if (forwardFrom >= 0 && forwardFrom < at) items.push({ forward: chunk.subarray(forwardFrom, at) });
          this.#pending = Buffer.from(chunk.subarray(at));
          return items;
        }
        frame = header.frame;
        if (frame.action === 'collect' && forwardFrom >= 0) {
          if (forwardFrom < at) items.push({ forward: chunk.subarray(forwardFrom, at) });
          forwardFrom = -1;
        } else if (frame.action !== 'collect' && forwardFrom < 0) {
          forwardFrom = at;
        }
        at += header.size;
        this.#frame = frame;
      }
      const take = Math.min(frame.remaining, chunk.length - at);
      if (take > 0) {
        const payload = chunk.subarray(at, at + take);
        if (frame.action === 'tap') items.push({ tapped: payload });
        else if (frame.action === 'collect') frame.parts.push(this.#unmask(frame, payload));
        frame.seen += take;
        frame.remaining -= take;
        at += take;
      }
      if (frame.remaining === 0) {
        this.#frame = undefined;
        if (frame.action === 'collect') {
          items.push({ frame: { opcode: frame.opcode, fin: frame.fin, payload: frame.parts.length === 1 ? frame.parts[0]! : Buffer.concat(frame.parts) } });
          forwardFrom = at;
        }
      }
    }
    if (forwardFrom >= 0 && forwardFrom < chunk.length) items.push({ forward: forwardFrom === 0 ? chunk : chunk.subarray(forwardFrom) });
    return items;
  }

  /** The frame starting at `at` and its header's size, or undefined when the header is not all there yet. */
  #header(chunk: Buffer, at: number): { frame: Frame; size: number } | undefined {
    if (chunk.length - at < 2) return undefined;
    const first = chunk[at]!;
    const second = chunk[at + 1]!;
    const masked = (second & 0x80) !== 0;
    const short = second & 0x7f;
    const size = 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + (masked ? 4 : 0);
    if (chunk.length - at < size) return undefined;
    const fin = (first & 0x80) !== 0;
    const opcode = first & 0x0f;
    if ((first & 0x70) !== 0) throw new FrameError(1002, 'reserved bits set (no extension was agreed)');
    if (masked !== this.#policy.masked) throw new FrameError(1002, this.#policy.masked ? 'client frames must be masked' : 'server frames must not be masked');
    let length = short;
    if (short === 126) length = chunk.readUInt16BE(at + 2);
    else if (short === 127) {
      if (chunk.readUInt32BE(at + 2) !== 0) throw new FrameError(1009, 'frame too large');
      length = chunk.readUInt32BE(at + 6);
    }
    if (isControl(opcode)) {
      if (opcode > OPCODE.pong) throw new FrameError(1002, `unknown opcode ${opcode}`);
      if (!fin || length > 125) throw new FrameError(1002, 'control frames are unfragmented and at most 125 bytes');
    } else if (opcode === OPCODE.continuation) {
      if (this.#message === 0) throw new FrameError(1002, 'continuation frame outside a fragmented message');
    } else if (opcode === OPCODE.text || opcode === OPCODE.binary) {
      if (this.#message !== 0) throw new FrameError(1002, 'a new message inside a fragmented one');
    } else {
      throw new FrameError(1002, `unknown opcode ${opcode}`);
    }
    const messageOpcode = opcode === OPCODE.continuation ? this.#message : opcode;
    if (!isControl(opcode)) this.#message = fin ? 0 : messageOpcode;
    const action = this.#policy.action(opcode, messageOpcode);
    if (length > this.#policy.maxFrame || (action === 'collect' && length > this.#policy.maxCollected)) throw new FrameError(1009, 'frame too large');
    // Only a held-back frame is unmasked here; a forwarded one keeps its mask for the next hop.
    const key = masked && action === 'collect' ? Buffer.from(chunk.subarray(at + size - 4, at + size)) : undefined;
    return { frame: { opcode, fin, action, key, remaining: length, parts: [], seen: 0 }, size };
  }

  #unmask(frame: Frame, payload: Buffer): Buffer {
    const copy = Buffer.from(payload); // the read's buffer may be reused; held-back frames are small
    const key = frame.key;
    if (key) for (let i = 0; i < copy.length; i++) copy[i] = copy[i]! ^ key[(frame.seen + i) & 3]!;
    return copy;
  }
}
