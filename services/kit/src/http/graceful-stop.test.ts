// Stopping a service as a rolling update does (graceful-stop.ts), watched from its clients: a download in flight
// completes, requests that still arrive while it drains are answered (and told to reconnect), readiness says so,
// and only then the listener goes; the grace period bounds how long a stuck client can hold the stop.
import { request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from './create-app.ts';
import { stopGracefully } from './graceful-stop.ts';
import { ignoreError } from '../errors/ignore-error.ts';

const CHUNK = Buffer.alloc(64 * 1024, 7);
const BIG = Buffer.alloc(8 * 1024 * 1024, 9);

async function startApp(): Promise<{ app: FastifyInstance; url: string }> {
  const app = await createApp({ service: 'graceful-test', version: '0', errorShape: 'problem', logLevel: 'silent', openapi: { title: 't' } });
  app.get('/ping', async () => ({ pong: true }));
  // A download that takes its time: `chunks` × 64 KiB, one every 20 ms; `forever` never ends.
  app.get<{ Querystring: { chunks?: string } }>('/download', (req, reply) => {
    const chunks = Number(req.query.chunks ?? 40);
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'application/octet-stream', ...(chunks > 0 ? { 'content-length': String(chunks * CHUNK.length) } : {}) });
    let sent = 0;
    const timer = setInterval(() => {
      if (chunks > 0 && sent === chunks) {
        clearInterval(timer);
        reply.raw.end();
        return;
      }
      reply.raw.write(CHUNK);
      sent++;
    }, 20);
    reply.raw.on('close', () => clearInterval(timer));
  });
  // A large answer ended at once: node buffers what the slow reader has not taken yet.
  app.get('/big', (_req, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG.length) });
    reply.raw.end(BIG);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: number;
}

/** GET; with `slowly`, the body is read a chunk every 10 ms (a client on a slow link). */
function get(url: string, agent?: Agent, slowly = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (slowly) {
          res.pause();
          setTimeout(() => res.resume(), 10);
        }
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes }));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error(`aborted after ${bytes} bytes`)));
    });
    req.on('error', reject);
    req.end();
  });
}

let stopped: Promise<void> | undefined;
afterEach(async () => {
  await stopped?.catch(ignoreError("teardown: the stop's outcome was asserted by the test"));
  stopped = undefined;
});

describe('graceful stop', () => {
  it('finishes the download in flight, answers requests that arrive while draining, then closes the listener', async () => {
    const { app, url } = await startApp();
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await get(`${url}/ping`, keepAlive)).headers.connection).toBe('keep-alive');
    expect((await get(`${url}/health/ready`)).status).toBe(200);

    const download = get(`${url}/download?chunks=60`); // ~1.2 s
    await sleep(100);
    stopped = stopGracefully(app, { delay_seconds: 0.6, grace_seconds: 30 }, () => app.close());

    // Draining: not ready, but still serving, on the open keep-alive connection and on new ones, each answer
    // telling the client to open its next connection elsewhere.
    const ready = await get(`${url}/health/ready`);
    expect(ready.status).toBe(503);
    const onKeptConnection = await get(`${url}/ping`, keepAlive);
    expect(onKeptConnection.status).toBe(200);
    expect(onKeptConnection.headers.connection).toBe('close');
    expect((await get(`${url}/ping`)).status).toBe(200);

    await sleep(700); // past the delay: the listener is closed, the download still runs
    await expect(get(`${url}/ping`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const downloaded = await download;
    expect(downloaded).toMatchObject({ status: 200, bytes: 60 * CHUNK.length });
    // ...and the stop ends with it, not a keep-alive timeout later.
    const finishing = Date.now();
    await stopped;
    expect(Date.now() - finishing).toBeLessThan(4000); // node keeps an idle connection 5 s
    keepAlive.destroy();
  });

  it('delivers every byte of an answer the app has finished writing but a slow client has not read yet', async () => {
    const { app, url } = await startApp();
    const download = get(`${url}/big`, new Agent({ keepAlive: true }), true);
    await sleep(200); // the app has ended the response; most of it waits in buffers
    stopped = stopGracefully(app, { delay_seconds: 0, grace_seconds: 60 }, () => app.close());
    expect(await download).toMatchObject({ status: 200, bytes: BIG.length });
    await stopped;
  });

  it('cuts what is still running when the grace period is over, so the stop ends', async () => {
    const { app, url } = await startApp();
    const endless = get(`${url}/download?chunks=0`);
    const caught = endless.catch((error: Error) => error);
    await sleep(100);
    const began = Date.now();
    stopped = stopGracefully(app, { delay_seconds: 0, grace_seconds: 0.5 }, () => app.close());
    await stopped;
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(await caught).toBeInstanceOf(Error);
  });
});
