// The storage GET reader against real HTTP servers (node:http, node:https, and a raw socket where a server must
// misbehave): bodies arrive intact over plain and TLS connections, framed by length or chunked, whether a download
// writes them (reused slabs, a slow client holding them) or a stream reads them; a storage that fails is an error,
// never a short body passed off as whole; a client that goes away closes the storage connection.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamBody } from './upstream-body.ts';

// Several slabs' worth, not a multiple of one, so slabs are reused while the client still holds others.
const content = randomBytes(3 * 1024 * 1024 + 4_321);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** A client that takes each write a moment later, as a busy socket does: reads must wait for slabs to come back. */
function slowClient(): Writable & { received(): Buffer } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(Buffer.from(chunk)); // a copy: the slab is written over once this calls back
      setImmediate(callback);
    },
  });
  return Object.assign(sink, { received: () => Buffer.concat(chunks) });
}

async function listen(server: HttpServer | NetServer): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

async function readAll(body: UpstreamBody): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('reading a storage GET', () => {
  let plain: HttpServer;
  let secure: HttpServer;
  let plainHost: string;
  let secureHost: string;
  let ca: string;

  beforeAll(async () => {
    const handler = (request: { url?: string }, response: ServerResponse) => {
      if (request.url === '/chunked') {
        // No length: node:http sends it chunked, in pieces of odd sizes.
        for (let at = 0; at < content.length; at += 100_003) response.write(content.subarray(at, at + 100_003));
        response.end();
      } else {
        response.writeHead(200, { 'content-length': content.length });
        response.end(content);
      }
    };
    plain = createHttpServer(handler);
    const pems = await generate([{ name: 'commonName', value: 'storage.test' }], {
      keySize: 2048,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    ca = pems.cert;
    secure = createHttpsServer({ cert: pems.cert, key: pems.private }, handler);
    [plainHost, secureHost] = await Promise.all([listen(plain), listen(secure)]);
  });

  afterAll(async () => {
    plain?.closeAllConnections();
    secure?.closeAllConnections();
    await Promise.all([plain && new Promise((resolve) => plain.close(resolve)), secure && new Promise((resolve) => secure.close(resolve))]);
  });

  const open = (url: string, extra: { tls?: { ca: string } } = {}) => UpstreamBody.open({ url: new URL(url), headTimeoutMs: 10_000, ...extra });

  for (const scheme of ['http', 'https'] as const) {
    for (const path of ['/length', '/chunked']) {
      it(`writes a ${path.slice(1)} body over ${scheme} to a slow client byte for byte, and counts it`, async () => {
        const response = await open(`${scheme}://${scheme === 'http' ? plainHost : secureHost}${path}`, scheme === 'https' ? { tls: { ca } } : {});
        expect(response.status).toBe(200);
        const client = slowClient();
        await response.body.writeTo(client);
        expect(sha256(client.received())).toBe(sha256(content));
        expect(response.body.bytesRead).toBe(content.length);
        expect(response.body.destroyed).toBe(true);
      });
    }
  }

  it('is an ordinary Readable for any other reader', async () => {
    for (const path of ['/length', '/chunked']) {
      const response = await open(`http://${plainHost}${path}`);
      expect(sha256(await readAll(response.body))).toBe(sha256(content));
    }
  });

  it('refuses a certificate it does not trust', async () => {
    await expect(open(`https://${secureHost}/length`)).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });

  describe('against a misbehaving storage', () => {
    let server: NetServer;
    let host: string;
    let behave: (socket: Socket) => void = () => {};
    const connections = new Set<Socket>();

    beforeAll(async () => {
      server = createNetServer((socket) => {
        connections.add(socket);
        socket.on('close', () => connections.delete(socket));
        socket.on('error', () => {});
        socket.once('data', () => behave(socket));
      });
      host = await listen(server);
    });
    afterAll(async () => {
      for (const socket of connections) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });

    it('skips an interim 100 Continue and reads the answer after it', async () => {
      behave = (socket) => socket.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
      const response = await open(`http://${host}/`);
      expect(response.status).toBe(200);
      expect((await readAll(response.body)).toString()).toBe('abc');
    });

    it('writes a body that came whole with the response head (one read) to a client', async () => {
      behave = (socket) => socket.write('HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\n\r\nhello'); // and stays open
      const response = await open(`http://${host}/`);
      const client = slowClient();
      await response.body.writeTo(client);
      expect(client.received().toString()).toBe('hello');
      await expect.poll(() => connections.size).toBe(0);
    });

    it('fails a download whose storage connection breaks mid-body, in either reading mode', async () => {
      behave = (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${content.length}\r\n\r\n`);
        socket.write(content.subarray(0, 1_000_000), () => socket.destroy());
      };
      const written = await open(`http://${host}/`);
      await expect(written.body.writeTo(slowClient())).rejects.toMatchObject({ code: 'ECONNRESET' });
      const streamed = await open(`http://${host}/`);
      await expect(readAll(streamed.body)).rejects.toMatchObject({ code: 'ECONNRESET' });
    });

    it('gives up on a storage that accepts the connection but never answers', async () => {
      behave = () => {};
      await expect(UpstreamBody.open({ url: new URL(`http://${host}/`), headTimeoutMs: 200 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
      await expect.poll(() => connections.size).toBe(0);
    });

    it('reports garbage instead of HTTP as a broken connection', async () => {
      behave = (socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n');
      await expect(open(`http://${host}/`)).rejects.toMatchObject({ name: 'ProtocolError', code: 'ECONNRESET' });
    });

    it('closes the storage connection when the client goes away mid-body', async () => {
      behave = (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${content.length * 10}\r\n\r\n`);
        const more = () => {
          while (socket.writable && socket.write(content));
        };
        socket.on('drain', more);
        more();
      };
      const response = await open(`http://${host}/`);
      await expect.poll(() => connections.size).toBe(1);
      // A client that takes a few writes, then never calls back and hangs up.
      let writes = 0;
      const client = new Writable({
        write(_chunk, _encoding, callback) {
          if (++writes < 3) setImmediate(callback);
          else setTimeout(() => client.destroy(), 50);
        },
      });
      await expect(response.body.writeTo(client)).rejects.toThrow(/closed before the body was written/);
      await expect.poll(() => connections.size).toBe(0);
    });
  });
});
