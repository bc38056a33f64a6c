// Where a storage response's body ends, whatever way the bytes are cut into socket reads: a body is exactly its
// bytes (nothing of the framing, nothing after it), and a response cut short or malformed is an error.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BodyDecoder, parseResponseHead, ProtocolError } from './http1-framing.ts';

const head = (text: string) => parseResponseHead(text);

/** Feeds `wire` in pieces of `step` bytes (fresh buffers, as socket reads are); returns the body and whether it ended. */
function decode(decoder: BodyDecoder, wire: Buffer, step: number): { body: Buffer; done: boolean } {
  const parts: Buffer[] = [];
  for (let at = 0; at < wire.length; at += step) decoder.feed(Buffer.from(wire.subarray(at, at + step)), (chunk) => parts.push(Buffer.from(chunk)));
  return { body: Buffer.concat(parts), done: decoder.done };
}

function chunked(body: Buffer, sizes: number[], trailer = ''): Buffer {
  const pieces: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    pieces.push(Buffer.from(`${size.toString(16)};ext=1\r\n`), body.subarray(at, at + size), Buffer.from('\r\n'));
    at += size;
  }
  return Buffer.concat([...pieces, Buffer.from(`0\r\n${trailer}\r\n`)]);
}

describe('HTTP/1.1 response framing', () => {
  it('parses a status line and headers, joining repeated fields', () => {
    const parsed = head('HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\nVary: Origin\r\nvary:  Accept-Encoding ');
    expect(parsed.status).toBe(206);
    expect(parsed.headers.get('content-length')).toBe('10');
    expect(parsed.headers.get('vary')).toBe('Origin, Accept-Encoding');
    expect(() => head('SSH-2.0-OpenSSH_9.6')).toThrow(ProtocolError);
    expect(() => head('HTTP/1.1 200 OK\r\nno colon here')).toThrow(ProtocolError);
  });

  it('ends a Content-Length body at its length, ignoring what follows, at any cut', () => {
    const body = randomBytes(1000);
    for (const step of [1, 7, 999, 5000]) {
      const decoder = new BodyDecoder(head('HTTP/1.1 200 OK\r\nContent-Length: 1000'));
      expect(decode(decoder, Buffer.concat([body, Buffer.from('HTTP/1.1 200 garbage')]), step)).toEqual({ body, done: true });
    }
    expect(new BodyDecoder(head('HTTP/1.1 200 OK\r\nContent-Length: 0')).done).toBe(true);
    expect(() => new BodyDecoder(head('HTTP/1.1 200 OK\r\nContent-Length: -1'))).toThrow(ProtocolError);
  });

  it('decodes a chunked body with extensions and trailers, at any cut', () => {
    const body = randomBytes(70_000);
    const wire = chunked(body, [1, 65_536, 3_000, 1_463], 'x-checksum: abc\r\n');
    for (const step of [1, 2, 3, 10, 4096, 100_000]) {
      expect(decode(new BodyDecoder(head('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked')), wire, step)).toEqual({ body, done: true });
    }
  });

  it('hands body bytes on as views of the buffer read, not copies', () => {
    const decoder = new BodyDecoder(head('HTTP/1.1 200 OK\r\nContent-Length: 5'));
    const read = Buffer.from('hello');
    const seen: Buffer[] = [];
    decoder.feed(read, (chunk) => seen.push(chunk));
    expect(seen[0]!.buffer).toBe(read.buffer);
  });

  it('reads a body without length until the connection closes', () => {
    const decoder = new BodyDecoder(head('HTTP/1.1 200 OK\r\nConnection: close'));
    expect(decode(decoder, Buffer.from('all of it'), 4)).toEqual({ body: Buffer.from('all of it'), done: false });
    decoder.end();
    expect(decoder.done).toBe(true);
  });

  it('reports a body cut short by the connection, and malformed chunks', () => {
    const short = new BodyDecoder(head('HTTP/1.1 200 OK\r\nContent-Length: 10'));
    decode(short, Buffer.from('12345'), 5);
    expect(() => short.end()).toThrow(/before the end of the body/);
    const unfinished = new BodyDecoder(head('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked'));
    decode(unfinished, Buffer.from('5\r\nabcde\r\n'), 3);
    expect(() => unfinished.end()).toThrow(ProtocolError);
    expect(() => decode(new BodyDecoder(head('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked')), Buffer.from('zz\r\n'), 10)).toThrow(/invalid chunk size/);
    expect(() => decode(new BodyDecoder(head('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked')), Buffer.from('2\r\nabX\r\n'), 10)).toThrow(/CRLF/);
    expect(() => decode(new BodyDecoder(head('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked')), Buffer.alloc(5000, 0x31), 100)).toThrow(/too long/);
  });

  it('knows responses that have no body', () => {
    expect(new BodyDecoder(head('HTTP/1.1 204 No Content')).done).toBe(true);
    expect(new BodyDecoder(head('HTTP/1.1 304 Not Modified\r\nContent-Length: 99')).done).toBe(true);
  });
});
