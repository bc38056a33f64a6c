// Slow and abandoned clients against a real listener of the app factory, with short configured limits: they are
// cut while other requests are served, and nothing that makes progress is (long uploads, a busy service).
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from './create-app.ts';
import { listenUnencrypted, type PlainListener } from './plain-listener.ts';

const timeouts = { headers_seconds: 0.5, body_window_seconds: 0.5, body_min_bytes: 1024, idle_seconds: 1 };
const SLOW_CLIENTS = 80;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let app: FastifyInstance;
let port: number;
let second: PlainListener;

beforeAll(async () => {
  app = await createApp({ service: 'test', version: '1', errorShape: 'envelope', logLevel: 'silent', timeouts, openapi: { title: 't' } });
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  app.post('/json', async (request) => ({ got: Object.keys(request.body as object).length }));
  app.post('/upload', async (request) => {
    const query = request.query as { wait?: string };
    // A service that is slow to take the body (storage busy): the client is not to blame.
    if (query.wait) await sleep(Number(query.wait));
    let bytes = 0;
    for await (const chunk of request.body as AsyncIterable<Buffer>) bytes += chunk.length;
    return { bytes };
  });
  app.get('/slow-answer', async () => (await sleep(2500), { ok: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
  second = await listenUnencrypted(app, { host: '127.0.0.1', port: 0, redirectTo: () => undefined });
});
afterAll(async () => {
  await second?.close();
  await app?.close();
});

/** A raw connection; resolves `closed` when the server ends it, with what it answered. */
function rawClient(toPort: number): { socket: Socket; closed: Promise<string> } {
  const socket = connect(toPort, '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk.toString()));
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(answer)));
  return { socket, closed };
}

/** Sends one byte at a time (a few a second): far below body_min_bytes per window. */
function dripBody(socket: Socket, path: string, contentType: string): () => void {
  socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: 100000\r\n\r\n`);
  const timer = setInterval(() => socket.writable && socket.write('a'), 100);
  return () => clearInterval(timer);
}

async function servedMeanwhile(toPort: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`http://127.0.0.1:${toPort}/json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    statuses.push(res.status);
    await res.text();
    await sleep(100);
  }
  return statuses;
}

describe('slow clients', () => {
  it(`cuts ${SLOW_CLIENTS} connections sending their bodies a byte at a time, on both listeners, while others are served`, async () => {
    const clients = Array.from({ length: SLOW_CLIENTS }, (_, i) => {
      const client = rawClient(i % 2 === 0 ? port : second.port);
      const stop = dripBody(client.socket, i % 4 < 2 ? '/json' : '/upload', i % 4 < 2 ? 'application/json' : 'application/octet-stream');
      return { ...client, stop };
    });
    const [served, served2] = await Promise.all([servedMeanwhile(port), servedMeanwhile(second.port)]);
    await Promise.all(clients.map((c) => c.closed));
    for (const c of clients) c.stop();
    expect([...served, ...served2]).toEqual(Array(10).fill(200));
  });

  it('cuts connections that send their headers slowly, answering 408 in the service shape', async () => {
    const clients = Array.from({ length: 20 }, () => rawClient(port));
    const timers = clients.map(({ socket }) => {
      socket.write('GET /json HTTP/1.1\r\nHost: x\r\n');
      return setInterval(() => socket.writable && socket.write('X-A: b\r\n'), 100);
    });
    const answers = await Promise.all(clients.map((c) => c.closed));
    timers.forEach(clearInterval);
    for (const answer of answers) {
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toEqual({ success: false, message: 'the request headers took too long', details: 'Request timeout' });
    }
  });

  it('closes a connection that sent a request and stopped, and one idle after its answer', async () => {
    const stalled = rawClient(port);
    stalled.socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 10\r\n\r\nabc');
    await stalled.closed;
    const idle = rawClient(port);
    idle.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await idle.closed).toMatch(/^HTTP\/1\.1 200 OK/);
  });
});

describe('clients that make progress', () => {
  it('finishes a body that takes many windows to arrive at a steady rate (no total limit)', async () => {
    const client = rawClient(port);
    const chunk = Buffer.alloc(2048, 'b');
    const rounds = 20; // 20 × 150 ms = 3 s: six body windows, three idle periods
    client.socket.write(
      `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${chunk.length * rounds}\r\nConnection: close\r\n\r\n`,
    );
    for (let i = 0; i < rounds; i++) {
      client.socket.write(chunk);
      await sleep(150);
    }
    const answer = await client.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer).toContain(`{"bytes":${chunk.length * rounds}}`);
  });

  it('does not blame the client while the service holds the body back, nor while it prepares an answer', async () => {
    const body = Buffer.alloc(8 * 1024 * 1024, 'c');
    const upload = await fetch(`http://127.0.0.1:${port}/upload?wait=2500`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
    expect([upload.status, await upload.json()]).toEqual([200, { bytes: body.length }]);
    const answer = await fetch(`http://127.0.0.1:${port}/slow-answer`);
    expect([answer.status, await answer.json()]).toEqual([200, { ok: true }]);
  });
});
