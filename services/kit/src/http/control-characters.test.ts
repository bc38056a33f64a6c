// Control characters are refused by the app factory for every route, before the handler (and its SQL) runs.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlCharacterPointers } from './control-characters.ts';
import { createApp } from './create-app.ts';

const handled: string[] = [];
const logLines: string[] = [];

async function build(errorShape: 'problem' | 'envelope'): Promise<FastifyInstance> {
  const logStream = new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) });
  const app = await createApp({ service: 'test', version: '1', errorShape, logLevel: 'info', logStream, openapi: { title: 'test' } });
  // Routes registered inside a plugin get the check too (it is the app's, not the route's).
  await app.register(async (scope) => {
    scope.post('/orgs/:org', { schema: { body: { type: 'object', properties: { name: { type: 'string', pattern: '^[a-z]+$' } } } } }, async (request) => {
      handled.push(request.url);
      return { ok: true };
    });
    scope.get('/search', async (request) => (handled.push(request.url), { ok: true }));
  });
  await app.ready();
  return app;
}

describe('control characters at the edge (problem details)', () => {
  let app: FastifyInstance;
  beforeAll(async () => (app = await build('problem')));
  afterAll(() => app.close());

  it.each([
    ['a NUL in a JSON string', '/orgs/acme', { name: 'a\u0000b' }, '/name'],
    ['a NUL in a member name, nested', '/orgs/acme', { meta: [{ 'k\u0000': 1 }] }, '/meta/0/k\u0000'],
    ['an escape character in free text', '/orgs/acme', { description: 'red \u001b[31m' }, '/description'],
    ['DEL in a JSON string', '/orgs/acme', { name: 'x\u007f' }, '/name'],
    ['a NUL in a path parameter', '/orgs/a%00b', { name: 'ok' }, '/params/org'],
    ['a NUL in the query string', '/orgs/acme?q=%00', { name: 'ok' }, '/query/q'],
  ])('answers %s with 422 naming it, before the handler runs', async (_what, url, payload, pointer) => {
    handled.length = 0;
    logLines.length = 0;
    const res = await app.inject({ method: 'POST', url, payload });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ type: 'https://boxyard.io/problems/validation', status: 422, errors: [{ pointer, rule: 'control-characters' }] });
    expect(handled).toEqual([]);
    // A caller's mistake: logged as a refused request (info), never as an error with a stack trace.
    const levels = logLines.map((line) => (JSON.parse(line) as { level: number }).level);
    expect(Math.max(...levels)).toBeLessThan(40);
    expect(logLines.join('')).not.toContain('"stack"');
  });

  it('lets tab, line feed and carriage return through in free text, and other Unicode', async () => {
    handled.length = 0;
    const res = await app.inject({ method: 'POST', url: '/orgs/acme?q=caf%C3%A9', payload: { description: 'line one\r\n\tline two — ✓' } });
    expect(res.statusCode).toBe(200);
    expect(handled).toHaveLength(1);
  });
});

describe('control characters at the edge (envelope)', () => {
  let app: FastifyInstance;
  beforeAll(async () => (app = await build('envelope')));
  afterAll(() => app.close());

  it('answers 400 {success:false, message, details} naming where', async () => {
    const res = await app.inject({ method: 'GET', url: '/search?name=%01x' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, message: 'Request validation failed', details: expect.stringMatching(/^\/query\/name: control characters/) });
  });
});

describe('controlCharacterPointers', () => {
  it('walks a deeply nested body without exhausting the stack and reports at most 10', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(controlCharacterPointers(deep, '')).toHaveLength(1);
    expect(
      controlCharacterPointers(
        Array.from({ length: 50 }, () => '\u0000'),
        '',
      ),
    ).toHaveLength(10);
    expect(controlCharacterPointers({ 'a/b~c': '\u0000' }, '')).toEqual(['/a~1b~0c']);
  });
});
