// The output's way to the sockets: reads copied into frames that are reused once every socket has written them.
// The sockets here are stand-ins that keep each frame they were given (the very Buffer) and complete its write only
// when told: a frame filled again while a socket still had it to write would change what that socket sends.
import { createRequire } from 'node:module';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import { describe, expect, it } from 'vitest';
import { HIGH_WATER, OutputFanout, type Peer } from './output-fanout.ts';
import type { PeerSocket } from './framed-socket.ts';
import { spawnWithOutput } from './pty-output.ts';
import { encodeFrame, OPCODE } from '../ws/frames.ts';

const pty = createRequire(import.meta.url)('node-pty') as typeof NodePty;

/** A socket whose writes complete when `complete()` is called; `frames` are the Buffers it was handed. */
function slowSocket() {
  const frames: Buffer[] = [];
  const pending: (() => void)[] = [];
  const socket = {
    send: (data: Buffer | string, _options?: unknown, done?: () => void) => {
      frames.push(encodeFrame(OPCODE.binary, Buffer.from(data), false));
      if (done) pending.push(done);
    },
    sendFrame: (frame: Buffer, done: () => void) => {
      frames.push(frame);
      pending.push(done);
    },
  } as unknown as PeerSocket;
  return { socket, frames, complete: () => pending.splice(0).forEach((done) => done()) };
}

/** The payloads of unmasked frames, joined. */
function payloads(frames: Buffer[]): string {
  return frames
    .map((frame) => {
      const short = frame[1]! & 0x7f;
      const start = short === 126 ? 4 : short === 127 ? 10 : 2;
      const length = short === 126 ? frame.readUInt16BE(2) : short === 127 ? Number(frame.readBigUInt64BE(2)) : short;
      expect(frame.length).toBe(start + length);
      return frame.subarray(start).toString('latin1');
    })
    .join('');
}

const fakeTerm = () => {
  const calls: string[] = [];
  return { term: { pause: () => calls.push('pause'), resume: () => calls.push('resume') } as unknown as IPty, calls };
};

describe('output fanout', () => {
  it('sends every read once, in order, to each socket, never refilling a frame a socket has not written yet', () => {
    const { term } = fakeTerm();
    const fanout = new OutputFanout(term);
    const fast = slowSocket();
    const slow = slowSocket();
    fanout.peers.add({ socket: fast.socket, queued: 0, alive: true });
    fanout.observers.add({ socket: slow.socket, queued: 0, alive: true });
    // Reads land in one reused buffer, as the pty's do (pty-output.ts).
    const read = Buffer.alloc(4096);
    let expected = '';
    for (let i = 0; i < 200; i++) {
      const text = `${i}:`.padEnd(2048 + ((i * 37) % 2048), String.fromCharCode(97 + (i % 26))); // bulk-sized reads
      read.write(text, 'latin1');
      fanout.push(read, text.length);
      read.fill(0); // the next read overwrites it
      expected += text;
      fast.complete(); // one socket keeps up, the other holds every frame
    }
    fanout.flush();
    expect(payloads(fast.frames)).toBe(expected);
    expect(payloads(slow.frames)).toBe(expected);
    expect(fast.frames.length).toBeLessThan(20); // batched: ~64 KiB a frame
  });

  it('sends a small read (an echoed keystroke) at once, and one after bulk output behind that output', () => {
    const { term } = fakeTerm();
    const fanout = new OutputFanout(term);
    const socket = slowSocket();
    fanout.peers.add({ socket: socket.socket, queued: 0, alive: true });
    fanout.push(Buffer.from('k'));
    expect(payloads(socket.frames)).toBe('k'); // before the turn ends: no wait for setImmediate
    fanout.push(Buffer.alloc(4000, 'x'));
    fanout.push(Buffer.from('$ '));
    expect(socket.frames.length).toBe(1); // the bulk read waits for more, the prompt waits behind it
    fanout.flush();
    expect(payloads(socket.frames)).toBe(`k${'x'.repeat(4000)}$ `);
  });

  it('pauses the pty while a socket has more than HIGH_WATER queued, and resumes it once that drained', () => {
    const { term, calls } = fakeTerm();
    const fanout = new OutputFanout(term);
    const slow = slowSocket();
    const peer: Peer = { socket: slow.socket, queued: 0, alive: true };
    fanout.peers.add(peer);
    const read = Buffer.alloc(4096, 120);
    for (let sent = 0; sent <= HIGH_WATER; sent += read.length) fanout.push(read);
    fanout.flush();
    expect(calls).toEqual(['pause']);
    slow.complete();
    expect(peer.queued).toBe(0);
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('passes a payload larger than a frame on whole', () => {
    const { term } = fakeTerm();
    const fanout = new OutputFanout(term);
    const socket = slowSocket();
    fanout.peers.add({ socket: socket.socket, queued: 0, alive: true });
    fanout.push(Buffer.from('head '));
    const big = Buffer.alloc(100_000, 'b');
    fanout.push(big);
    fanout.push(Buffer.from(' tail'));
    fanout.flush();
    expect(payloads(socket.frames)).toBe(`head ${'b'.repeat(100_000)} tail`);
  });
});

describe('pty output', () => {
  it("reads node-pty's pty into one reused buffer (no Buffer per read), until the shell's end", async () => {
    const { term, output } = spawnWithOutput(() =>
      pty.spawn('/bin/sh', ['-c', 'seq 1 20000'], { cols: 80, rows: 24, encoding: null, env: { PATH: '/usr/bin:/bin' } }),
    );
    expect(output.direct).toBe(true);
    const buffers = new Set<Buffer>();
    let text = '';
    output.sink = (data, length) => {
      buffers.add(data);
      text += data.toString('latin1', 0, length);
    };
    let dataEvents = 0;
    term.onData(() => dataEvents++);
    const exit = await new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    expect(exit).toBe(0);
    const lines = text.split('\r\n').filter(Boolean);
    expect(lines.length).toBe(20_000);
    expect(lines.every((line, i) => line === String(i + 1))).toBe(true);
    expect(buffers.size).toBe(1);
    expect(dataEvents).toBe(0);
  });
});
