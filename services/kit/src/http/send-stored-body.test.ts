// A download from the local store is written straight to the socket through reused buffers (file-body.ts). What a
// client and an operator check: the bytes arrive intact (whole, ranged, several at once, reused buffers never
// corrupting each other), the reply's headers and hooks are Fastify's as usual, the download counter counts what
// was sent, and a client that goes away leaves no open file behind. Real files, real sockets, curl as the client.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from '@prometheus-io/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curlGet, hangUpMidBody } from '@boxyard/test/harness/download-clients.ts';
import { instrumentStore } from '../metrics/storage-metrics.ts';
import { FileBody } from '../storage/file-body.ts';
import { createLocalStore } from '../storage/local.ts';
import type { ObjectStore } from '../storage/types.ts';
import { sendStoredBody } from './send-stored-body.ts';

// Not a multiple of FileBody's 1 MiB buffers, and more of them than are in flight at once.
const content = randomBytes(5 * 1024 * 1024 + 12_345);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('sending a stored object as the reply body', () => {
  let root: string;
  let store: ObjectStore;
  let registry: Registry;
  let app: FastifyInstance;
  let base: string;
  const responses: { url: string; status: number }[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'send-body-'));
    registry = new Registry();
    store = instrumentStore(createLocalStore({ root }), registry);
    await store.put('files/big', Readable.from([content]));
    await store.put('files/empty', Readable.from([]));
    app = Fastify();
    app.addHook('onResponse', async (request, reply) => {
      responses.push({ url: request.url, status: reply.statusCode });
    });
    app.get<{ Params: { name: string }; Querystring: { start?: string; end?: string } }>('/files/:name', async (request, reply) => {
      const { start, end } = request.query;
      const range = start === undefined ? undefined : { start: Number(start), end: end === undefined ? undefined : Number(end) };
      const info = (await store.stat(`files/${request.params.name}`))!;
      const length = range ? Math.min(range.end ?? info.size - 1, info.size - 1) - range.start + 1 : info.size;
      reply
        .status(range ? 206 : 200)
        .header('content-length', length)
        .header('x-stored-name', request.params.name)
        .type('application/octet-stream');
      return sendStoredBody(request, reply, await store.get(`files/${request.params.name}`, range));
    });
    app.get('/generated', async (request, reply) => sendStoredBody(request, reply, Readable.from([Buffer.from('not a file')])));
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await app?.close();
    await rm(root, { recursive: true, force: true });
  });

  const downloadedBytes = async () => (await registry.getSingleMetric('boxyard_download_bytes_total')!.get()).values[0]?.value ?? 0;
  const curl = (path: string, extra: string[] = []) => curlGet(`${base}${path}`, ['--fail', ...extra]);
  const openFilesUnder = async (dir: string) => {
    const targets = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
    return targets.filter((target) => target.startsWith(dir)).length;
  };

  it('is a FileBody for the local store, so downloads take the reused-buffer path this test exercises', async () => {
    const body = await store.get('files/empty');
    expect(body).toBeInstanceOf(FileBody);
    body.destroy();
  });

  it('sends the whole file byte for byte with the headers the route set, and counts it once', async () => {
    const before = await downloadedBytes();
    const { head, body } = await curl('/files/big');
    expect(sha256(body)).toBe(sha256(content));
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head).toMatch(new RegExp(`content-length: ${content.length}\\r?$`, 'im'));
    expect(head).toMatch(/^x-stored-name: big\r?$/im);
    expect(await downloadedBytes()).toBe(before + content.length);
    expect(responses.at(-1)).toEqual({ url: '/files/big', status: 200 });
  });

  it('sends a range, and an empty file', async () => {
    const ranged = await curl('/files/big?start=1000&end=3000000');
    expect(ranged.head).toMatch(/^HTTP\/1\.1 206/);
    expect(ranged.body.equals(content.subarray(1000, 3_000_001))).toBe(true);
    const tail = await curl(`/files/big?start=${content.length - 7}`);
    expect(tail.body.equals(content.subarray(content.length - 7))).toBe(true);
    const empty = await curl('/files/empty');
    expect(empty.body.length).toBe(0);
    expect(empty.head).toMatch(/^content-length: 0\r?$/im);
  });

  it('keeps parallel downloads apart (each has its own buffers)', async () => {
    const bodies = await Promise.all(Array.from({ length: 6 }, (_, i) => curl(i % 2 ? '/files/big' : '/files/big?start=777')));
    bodies.forEach(({ body }, i) => expect(sha256(body)).toBe(sha256(i % 2 ? content : content.subarray(777))));
  });

  it('closes the file when the client goes away mid-body, and goes on serving', async () => {
    expect(await openFilesUnder(root)).toBe(0);
    await hangUpMidBody(`${base}/files/big`);
    await expect.poll(() => openFilesUnder(root), { timeout: 5000 }).toBe(0);
    const { body } = await curl('/files/big');
    expect(body.length).toBe(content.length);
  });

  it('sends a body that is not a stored file the usual way', async () => {
    const { body } = await curl('/generated');
    expect(body.toString()).toBe('not a file');
  });
});
