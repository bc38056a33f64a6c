// The relay's frame scanner against frames written by the ws library itself (the browser's and the agent's side
// speak RFC 6455 through it or a browser): every split of the byte stream gives the same frames and passes on
// exactly the data frames' bytes, masked or not.
import { describe, expect, it } from 'vitest';
import * as ws from 'ws';
import { Writable } from 'node:stream';
import { encodeFrame, FrameError, FrameScanner, OPCODE, parseClose, closePayload, type ScanItem } from './frames.ts';

/** The bytes ws writes for these messages, as a client (masked) or a server. */
async function wsBytes(mask: boolean, messages: (string | Buffer)[], fragmented = false): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
    writev(entries, done) {
      for (const entry of entries) chunks.push(entry.chunk as Buffer);
      done();
    },
  });
  // ws's frame writer (exported by the package, not by its type definitions).
  const sender = new (ws as any).Sender(sink, {});
  for (const message of messages) {
    const binary = Buffer.isBuffer(message);
    if (fragmented && binary) {
      const half = message.length >> 1;
      sender.send(message.subarray(0, half), { binary, mask, fin: false, compress: false, rsv1: false }, () => {});
      sender.send(message.subarray(half), { binary, mask, fin: true, compress: false, rsv1: false }, () => {});
    } else sender.send(binary ? message : Buffer.from(message), { binary, mask, fin: true, compress: false, rsv1: false }, () => {});
  }
  sender.ping(Buffer.from('hi'), mask, () => {});
  await new Promise((resolve) => setImmediate(resolve));
  return Buffer.concat(chunks);
}

const dataPolicy = (masked: boolean, tap = false) => ({
  masked,
  action: (opcode: number, message: number) =>
    opcode === OPCODE.binary || (opcode === OPCODE.continuation && message === OPCODE.binary)
      ? tap
        ? ('tap' as const)
        : ('forward' as const)
      : ('collect' as const),
  maxFrame: 1_048_576,
  maxCollected: 65_536,
});

function scanAll(scanner: FrameScanner, stream: Buffer, cuts: number[]): ScanItem[] {
  const items: ScanItem[] = [];
  let from = 0;
  for (const cut of [...cuts, stream.length]) {
    items.push(...scanner.scan(stream.subarray(from, cut)));
    from = cut;
  }
  return items;
}

const forwarded = (items: ScanItem[]) => Buffer.concat(items.flatMap((item) => ('forward' in item ? [item.forward] : [])));
const frames = (items: ScanItem[]) => items.flatMap((item) => ('frame' in item ? [[item.frame.opcode, item.frame.payload.toString()]] : []));

describe('FrameScanner', () => {
  const input = Buffer.from('ls -la\r');
  const big = Buffer.alloc(70_000, 'x'); // a 64-bit length

  for (const mask of [true, false]) {
    it(`passes on the data frames' bytes and holds back the rest at every split point (${mask ? 'masked' : 'unmasked'})`, async () => {
      const resize = '{"type":"resize","cols":80,"rows":24}';
      const stream = await wsBytes(mask, [input, resize, Buffer.alloc(300, 'y'), big]);
      const dataOnly = await wsBytes(mask, [input, Buffer.alloc(300, 'y'), big]);
      // The data frames' bytes as ws wrote them: everything but the text frame and the ping (2 + 4 + 2 bytes masked).
      const textFrameLength = 2 + (mask ? 4 : 0) + resize.length;
      const pingLength = 2 + (mask ? 4 : 0) + 2;
      for (let cut = 1; cut < 400; cut++) {
        const items = scanAll(new FrameScanner(dataPolicy(mask)), stream, [cut, Math.min(cut + 7, stream.length)]);
        expect(frames(items)).toEqual([
          [OPCODE.text, resize],
          [OPCODE.ping, 'hi'],
        ]);
        expect(forwarded(items).length).toBe(stream.length - textFrameLength - pingLength);
        expect(forwarded(items).length).toBe(dataOnly.length - pingLength);
      }
    });
  }

  it('gives the payload of tapped frames, fragmented ones too, and passes them on', async () => {
    const stream = await wsBytes(false, [Buffer.from('hello '), Buffer.from('fragmented world')], true);
    for (let cut = 1; cut < stream.length; cut++) {
      const items = scanAll(new FrameScanner(dataPolicy(false, true)), stream, [cut]);
      const tapped = Buffer.concat(items.flatMap((item) => ('tapped' in item ? [item.tapped] : [])));
      expect(tapped.toString()).toBe('hello fragmented world');
      expect(frames(items)).toEqual([[OPCODE.ping, 'hi']]);
    }
  });

  it('hands over a whole read unchanged when it is only data frames', () => {
    const chunk = Buffer.concat([encodeFrame(OPCODE.binary, Buffer.from('a'), true), encodeFrame(OPCODE.binary, Buffer.from('bc'), true)]);
    const items = new FrameScanner(dataPolicy(true)).scan(chunk);
    expect(items).toHaveLength(1);
    expect((items[0] as { forward: Buffer }).forward).toBe(chunk);
  });

  it('refuses what the hop must not carry', () => {
    const refuse = (bytes: Buffer, masked: boolean, code: number) => {
      const scanner = new FrameScanner(dataPolicy(masked));
      let caught: unknown;
      try {
        scanner.scan(bytes);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(FrameError);
      expect((caught as FrameError).code).toBe(code);
    };
    refuse(encodeFrame(OPCODE.binary, Buffer.from('x'), false), true, 1002); // a client's frame unmasked
    refuse(encodeFrame(OPCODE.binary, Buffer.from('x'), true), false, 1002); // a server's frame masked
    refuse(Buffer.from([0xc2, 0x80, 0, 0, 0, 0]), true, 1002); // RSV1: no extension was agreed
    refuse(Buffer.from([0x83, 0x80, 0, 0, 0, 0]), true, 1002); // opcode 3
    refuse(Buffer.from([0x80, 0x80, 0, 0, 0, 0]), true, 1002); // a continuation with nothing to continue
    refuse(encodeFrame(OPCODE.text, Buffer.alloc(70_000, 'a'), true), true, 1009); // a control message too big to hold
    refuse(encodeFrame(OPCODE.binary, Buffer.alloc(1_048_577), true), true, 1009); // a frame over the limit
  });

  it('writes close frames the other side reads back', () => {
    const frame = encodeFrame(OPCODE.close, closePayload(4401, 'signed out'), false);
    const items = new FrameScanner(dataPolicy(false)).scan(frame);
    expect(items).toHaveLength(1);
    expect(parseClose((items[0] as { frame: { payload: Buffer } }).frame.payload)).toEqual({ code: 4401, reason: 'signed out' });
  });
});
