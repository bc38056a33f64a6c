// The app factory as a caller sees it: error shapes, validation pointers, no stack traces, health, metrics.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenMetrics } from '../metrics/metrics-listener.ts';
import { Readable } from 'node:stream';
import { setAccessPrincipal } from './access-log.ts';
import { createApp, redactUrl } from './create-app.ts';
import { conflict } from './http-error.ts';

const bodySchema = {
  type: 'object',
  required: ['name', 'version'],
  additionalProperties: false,
  properties: { name: { type: 'string', pattern: '^[a-z]+$' }, version: { type: 'string' }, size: { type: 'integer', minimum: 1 } },
} as const;

async function build(errorShape: 'problem' | 'envelope', readiness?: Record<string, () => Promise<void>>): Promise<FastifyInstance> {
  const app = await createApp({
    service: 'test',
    version: '1.2.3',
    errorShape,
    logLevel: 'silent',
    openapi: { title: 'test' },
    ...(readiness ? { readiness } : {}),
  });
  app.post(
    '/things/:org',
    { schema: { body: bodySchema, querystring: { type: 'object', properties: { limit: { type: 'integer', maximum: 100 } } } } },
    async () => ({ ok: true }),
  );
  app.get('/boom', async () => {
    throw new Error('secret internal detail at /srv/app.ts:12');
  });
  app.get('/taken', async () => {
    throw conflict('name already taken', [{ pointer: '/name', rule: 'unique', params: {}, detail: 'is already taken' }]);
  });
  await app.ready();
  return app;
}

describe('problem-details shape (RFC 9457)', () => {
  let app: FastifyInstance;
  beforeAll(async () => (app = await build('problem')));
  afterAll(() => app.close());

  it('answers 422 with one errors[] entry per failing value and a JSON pointer', async () => {
    const res = await app.inject({ method: 'POST', url: '/things/acme?limit=500', payload: { name: 'BAD name', size: 0, extra: 1 } });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    const body = res.json();
    expect(body).toMatchObject({ type: 'https://boxyard.io/problems/validation', title: 'Validation failed', status: 422 });
    // The body is validated first; each failing value of it is reported.
    expect(body.errors.map((e: { pointer: string; rule: string }) => `${e.pointer} ${e.rule}`).sort()).toEqual(
      ['/extra additionalProperties', '/name pattern', '/size minimum', '/version required'].sort(),
    );
    expect(body.errors.find((e: { rule: string }) => e.rule === 'minimum')).toEqual({
      pointer: '/size',
      rule: 'minimum',
      params: { comparison: '>=', limit: 1 },
      detail: 'must be >= 1',
    });
  });

  it('points into the query string for query parameters', async () => {
    const res = await app.inject({ method: 'POST', url: '/things/acme?limit=500', payload: { name: 'ok', version: '1' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([expect.objectContaining({ pointer: '/query/limit', rule: 'maximum' })]);
  });

  it('answers 400 when the body cannot be read, 409 for uniqueness, 404 with no errors entries', async () => {
    const bad = await app.inject({ method: 'POST', url: '/things/acme', headers: { 'content-type': 'application/json' }, payload: '{"name":' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ status: 400, errors: [] });
    const taken = await app.inject({ method: 'GET', url: '/taken' });
    expect(taken.statusCode).toBe(409);
    expect(taken.json()).toMatchObject({ type: 'https://boxyard.io/problems/conflict', errors: [{ pointer: '/name', rule: 'unique' }] });
    const missing = await app.inject({ method: 'GET', url: '/nowhere?x=1' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ type: 'https://boxyard.io/problems/not-found', status: 404, instance: '/nowhere', errors: [] });
  });

  it("answers a malformed URL in the same shape, not fastify's own", async () => {
    const res = await app.inject({ method: 'GET', url: '/things/%zz' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: 'https://boxyard.io/problems/bad-request', status: 400, errors: [] });
  });

  it('never leaks internals on an unhandled failure', async () => {
    const res = await app.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      type: 'https://boxyard.io/problems/internal',
      title: 'Internal server error',
      status: 500,
      detail: 'Internal server error',
      instance: '/boom',
      errors: [],
    });
    expect(res.body).not.toContain('secret');
    expect(res.body).not.toContain('.ts');
  });

  it("carries a request id, echoing the caller's", async () => {
    const res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect((await app.inject({ method: 'GET', url: '/health' })).headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

/** A GET on a connection of its own (closed after it: the app's close waits for keep-alive connections). */
function get(url: string, requestId: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, headers: { 'x-request-id': requestId } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode!, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

describe('request logs', () => {
  it('never carry credentials from the query string', async () => {
    const lines: string[] = [];
    const logStream = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
    const app = await createApp({ service: 'test', version: '1', errorShape: 'problem', logLevel: 'info', logStream, openapi: { title: 't' } });
    await app.inject({ method: 'GET', url: '/health?access_token=bxy_sa_1_secret', headers: { authorization: 'Bearer also-secret' } });
    await app.close();
    expect(lines.join('')).toContain('"url":"/health?access_token=[redacted]"');
    expect(lines.join('')).not.toMatch(/bxy_sa_1_secret|also-secret/);
    expect(redactUrl('/org/box?access_token=bxy_sa_1_secret&x=1')).toBe('/org/box?access_token=[redacted]&x=1');
    expect(redactUrl('/f?expires=9&signature=abc')).toBe('/f?expires=9&signature=[redacted]');
    expect(redactUrl('/plain/path')).toBe('/plain/path');
  });

  it('are one line per request at info, with what an operator filters on', async () => {
    const lines: string[] = [];
    const logStream = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
    const app = await createApp({ service: 'test', version: '1', errorShape: 'problem', logLevel: 'info', logStream, openapi: { title: 't' } });
    app.get('/items/:id', async (request) => {
      setAccessPrincipal(request, 'alice');
      return { id: (request.params as { id: string }).id };
    });
    // A streamed body (no Content-Length): its size is what went to the connection.
    app.get('/stream', async (_request, reply) =>
      reply.type('text/plain').send(Readable.from([Buffer.alloc(40_000, 'a'), Buffer.alloc(20_000, 'b')], { objectMode: false })),
    );
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const itemBody = (await get(`${base}/items/42?token=secret-value`, 'req-item')).body;
    expect((await get(`${base}/stream`, 'req-stream')).body.length).toBe(60_000);
    expect((await get(`${base}/nothing`, 'req-missing')).status).toBe(404);
    await app.close();
    const records = lines
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const id of ['req-item', 'req-stream', 'req-missing']) {
      const ofRequest = records.filter((r) => r.reqId === id);
      expect(
        ofRequest.map((r) => r.msg),
        id,
      ).toEqual(['request']);
      expect(ofRequest[0]!.level).toBe(30);
    }
    const line = (id: string) => records.find((r) => r.reqId === id)!;
    expect(line('req-item')).toMatchObject({
      method: 'GET',
      url: '/items/42?token=[redacted]',
      route: '/items/:id',
      status: 200,
      bytes: Buffer.byteLength(itemBody),
      principal: 'alice',
      ip: '127.0.0.1',
    });
    expect(line('req-item').duration_ms).toEqual(expect.any(Number));
    // Headers and chunk framing on top of the 60,000 bytes of body.
    expect(line('req-stream')).toMatchObject({ route: '/stream', status: 200, principal: null });
    expect(line('req-stream').bytes as number).toBeGreaterThan(60_000);
    expect(line('req-stream').bytes as number).toBeLessThan(61_000);
    expect(line('req-missing')).toMatchObject({ status: 404, url: '/nothing' });
    expect(lines.join('')).not.toContain('secret-value');
  });
});

describe('envelope shape', () => {
  let app: FastifyInstance;
  beforeAll(async () => (app = await build('envelope')));
  afterAll(() => app.close());

  it('answers invalid parameters with 400 {success:false, message, details}', async () => {
    const res = await app.inject({ method: 'POST', url: '/things/acme', payload: { name: 'ok' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, message: 'Request validation failed', details: "/version: must have required property 'version'" });
  });

  it('hides internals on 500 and says 404 in the same shape', async () => {
    expect((await app.inject({ method: 'GET', url: '/boom' })).json()).toEqual({
      success: false,
      message: 'Internal server error',
      details: 'Internal server error',
    });
    expect((await app.inject({ method: 'GET', url: '/nope' })).json()).toMatchObject({ success: false, message: 'No route for GET /nope' });
  });
});

describe('operational routes', () => {
  it('reports readiness per check: 200 when all pass, 503 naming the failing one', async () => {
    let storageUp = true;
    const app = await build('problem', {
      postgres: async () => {},
      storage: async () => {
        if (!storageUp) throw new Error('bucket gone');
      },
    });
    expect((await app.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' });
    const ready = await app.inject({ method: 'GET', url: '/health/ready' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { status: 'ok', checks: { postgres: 'ok', storage: 'ok' } }]);
    storageUp = false;
    const notReady = await app.inject({ method: 'GET', url: '/health/ready' });
    expect([notReady.statusCode, notReady.json()]).toEqual([503, { status: 'unavailable', checks: { postgres: 'ok', storage: 'failing' } }]);
    await app.close();
  });

  it('exposes Prometheus metrics labelled by route template on a listener of their own, and promtool accepts them', async () => {
    const app = await build('problem');
    await app.inject({ method: 'POST', url: '/things/acme', payload: { name: 'ok', version: '1' } });
    await app.inject({ method: 'POST', url: '/things/other', payload: { name: 'ok', version: '1' } });
    await app.inject({ method: 'GET', url: '/no/such/path' });
    // Not on the app's (public) port...
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    // ...but on the metrics listener, which serves nothing else.
    const listener = await listenMetrics(app.metrics, { host: '127.0.0.1', port: 0 });
    const response = await fetch(listener.url);
    const res = { headers: { 'content-type': response.headers.get('content-type') }, body: await response.text() };
    expect((await fetch(listener.url.replace(/\/metrics$/, '/health'))).status).toBe(404);
    expect((await fetch(listener.url, { method: 'POST' })).status).toBe(405);
    await listener.close();
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.body).toContain('http_request_duration_seconds_count{service="test",method="POST",route="/things/:org",status_code="200"} 2');
    expect(res.body).toContain('route="unmatched",status_code="404"');
    expect(res.body).not.toContain('/things/acme');
    expect(res.body).toContain('process_cpu_seconds_total');
    // promtool lints the exposition; the client's own default metrics carry two known lints, filtered: the
    // nodejs_active_*_total gauges, and @prometheus-io/client's nodejs_eventloop_utilization_{histogram,summary}.
    let lint = '';
    try {
      execFileSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (error) {
      lint = `${(error as { stdout?: string }).stdout ?? ''}${(error as { stderr?: string }).stderr ?? ''}`;
    }
    const problems = lint
      .split('\n')
      .filter(
        (l) =>
          l.trim() &&
          !/^nodejs_active_\w+_total non-counter metrics should not have "_total" suffix$|^nodejs_eventloop_utilization_(histogram|summary) metric name should not include type '(histogram|summary)'$/.test(
            l.trim(),
          ),
      );
    expect(problems).toEqual([]);
    await app.close();
  });

  it('serves Swagger UI at /api-docs and the OpenAPI description', async () => {
    const app = await build('problem');
    const ui = await app.inject({ method: 'GET', url: '/api-docs/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.body).toContain('swagger-ui');
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(spec.info).toEqual({ title: 'test', version: '1.2.3' });
    expect(Object.keys(spec.paths)).toEqual(['/things/{org}', '/boom', '/taken']);
    await app.close();
  });
});
