// Downloads from the s3 store on each of the run's real S3 servers (MinIO, SeaweedFS), as the services send them
// (sendStoredBody) and as a user checks them (curl): whole objects and ranges byte for byte, parallel downloads apart, the download counter, a
// client that hangs up mid-body leaving no connection to the storage open (counted at a TCP hop in front of
// the S3 server), a missing object and a range past the end as the errors callers map to 404 / 416, an unreachable
// storage as 503.
import { createHash, randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from '@prometheus-io/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curlGet, hangUpMidBody } from '@boxyard/test/harness/download-clients.ts';
import { createTestBucket, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { sendStoredBody } from '../../http/send-stored-body.ts';
import { instrumentStore } from '../../metrics/storage-metrics.ts';
import { ObjectNotFoundError, RangeNotSatisfiableError, StorageUnavailableError } from '../errors.ts';
import { createS3Store } from '../s3.ts';
import type { ObjectStore } from '../types.ts';
import { UpstreamBody } from './upstream-body.ts';

// Not a multiple of the 1 MiB slabs, and more of them than are in flight at once.
const content = randomBytes(5 * 1024 * 1024 + 12_345);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
/** An object that arrives with the response head, in the first read. */
const small = 1000;

/** A TCP hop in front of the S3 server that knows how many connections go through it right now. */
async function countingHop(target: URL): Promise<{ endpoint: string; open(): number; made(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let made = 0;
  const server: Server = createServer((client) => {
    made++;
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    for (const socket of [client, upstream]) socket.on('error', () => {});
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    open: () => sockets.size,
    made: () => made,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.each(s3Servers)('downloads from the s3 store on $server', ({ server }) => {
  let hop: Awaited<ReturnType<typeof countingHop>>;
  let store: ObjectStore;
  let registry: Registry;
  let app: FastifyInstance;
  let base: string;
  let unreachable: ObjectStore;

  beforeAll(async () => {
    const bucket = await createTestBucket('s3get', s3Server(server));
    // Stored directly; read through the hop, so every connection it counts is a download's.
    const direct = createS3Store({ ...bucket, prefix: 'svc' });
    await direct.put('files/big', Readable.from([content]));
    await direct.put('files/small', Readable.from([content.subarray(0, small)]));
    hop = await countingHop(new URL(bucket.endpoint));
    registry = new Registry();
    store = instrumentStore(createS3Store({ ...bucket, endpoint: hop.endpoint, prefix: 'svc' }), registry);
    unreachable = createS3Store({ ...bucket, endpoint: 'http://127.0.0.1:1', prefix: 'svc' });
    app = Fastify();
    app.get<{ Params: { name: string }; Querystring: { start?: string; end?: string; down?: string } }>('/files/:name', async (request, reply) => {
      const { start, end, down } = request.query;
      const range = start === undefined ? undefined : { start: Number(start), end: end === undefined ? undefined : Number(end) };
      try {
        const body = await (down ? unreachable : store).get(`files/${request.params.name}`, range);
        const size = request.params.name === 'small' ? small : content.length;
        const last = Math.min(range?.end ?? size - 1, size - 1);
        if (range) reply.status(206).header('content-range', `bytes ${range.start}-${last}/${size}`);
        reply.header('content-length', last - (range?.start ?? 0) + 1).type('application/octet-stream');
        return sendStoredBody(request, reply, body);
      } catch (error) {
        if (error instanceof RangeNotSatisfiableError) reply.header('content-range', `bytes */${error.size}`);
        throw error; // Fastify answers with the error's statusCode, as the services' error handler does
      }
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await app?.close();
    await hop?.close();
  });

  const downloadedBytes = async () => (await registry.getSingleMetric('boxyard_download_bytes_total')!.get()).values[0]?.value ?? 0;
  const curl = (path: string, extra: string[] = []) => curlGet(`${base}${path}`, extra);

  it('is an UpstreamBody, so downloads take the reused-buffer path', async () => {
    const body = await store.get('files/big');
    expect(body).toBeInstanceOf(UpstreamBody);
    body.destroy();
    await expect.poll(() => hop.open()).toBe(0);
  });

  it('sends the whole object byte for byte and counts it once', async () => {
    const before = await downloadedBytes();
    const { head, body } = await curl('/files/big');
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(sha256(body)).toBe(sha256(content));
    await expect.poll(downloadedBytes).toBe(before + content.length);
  });

  it('sends ranges: the first byte, the last byte, a middle, to the end', async () => {
    const last = content.length - 1;
    for (const [start, end] of [
      [0, 0],
      [last, last],
      [300_000, 3_000_000],
      [last - 6, undefined],
    ] as const) {
      const { head, body } = await curl(`/files/big?start=${start}${end === undefined ? '' : `&end=${end}`}`);
      expect(head).toMatch(/^HTTP\/1\.1 206/);
      expect(body.equals(content.subarray(start, (end ?? last) + 1))).toBe(true);
    }
  });

  it('sends an object that came whole with the response head, and a range of it', async () => {
    expect((await curl('/files/small')).body.equals(content.subarray(0, small))).toBe(true);
    expect((await curl('/files/small?start=10&end=19')).body.equals(content.subarray(10, 20))).toBe(true);
  });

  it('answers a range past the end as not satisfiable, with the size, and a missing object as not found', async () => {
    await expect(store.get('files/big', { start: content.length })).rejects.toMatchObject({ name: 'RangeNotSatisfiableError', size: content.length });
    const { head } = await curl(`/files/big?start=${content.length}`);
    expect(head).toMatch(/^HTTP\/1\.1 416/);
    expect(head).toMatch(new RegExp(`^content-range: bytes \\*/${content.length}\\r?$`, 'im'));
    await expect(store.get('files/missing')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect((await curl('/files/missing')).head).toMatch(/^HTTP\/1\.1 404/);
  });

  it('takes the size for a range past the end from the 416 itself: one request, no HEAD after it', async () => {
    // MinIO names the size in the error's XML (ActualObjectSize), SeaweedFS only in `Content-Range: bytes */size`.
    await expect.poll(() => hop.open()).toBe(0);
    const before = hop.made();
    await expect(store.get('files/big', { start: content.length + 5 })).rejects.toMatchObject({ name: 'RangeNotSatisfiableError', size: content.length });
    expect(hop.made()).toBe(before + 1);
    await expect.poll(() => hop.open()).toBe(0);
  });

  it('keeps six parallel downloads apart', async () => {
    const bodies = await Promise.all(Array.from({ length: 6 }, (_, i) => curl(i % 2 ? '/files/big' : '/files/big?start=777')));
    bodies.forEach(({ body }, i) => expect(sha256(body)).toBe(sha256(i % 2 ? content : content.subarray(777))));
  });

  it('closes the storage connection when the client hangs up mid-body, and goes on serving', async () => {
    await expect.poll(() => hop.open()).toBe(0);
    await hangUpMidBody(`${base}/files/big`);
    await expect.poll(() => hop.open()).toBe(0);
    expect(sha256((await curl('/files/big')).body)).toBe(sha256(content));
  });

  it('reports an unreachable storage as unavailable: 503', async () => {
    await expect(unreachable.get('files/big')).rejects.toBeInstanceOf(StorageUnavailableError);
    expect((await curl('/files/big?down=1')).head).toMatch(/^HTTP\/1\.1 503/);
  });
});
