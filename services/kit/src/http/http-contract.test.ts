// What the fuzzer (test/fuzz) checks of every service, pinned on the kit itself: a method a path lacks answers
// 405 with Allow, a JSON body is not coerced, and every error a route can give is in the OpenAPI description with
// the media type and body it is served with.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from './create-app.ts';
import { notFound } from './http-error.ts';

async function build(errorShape: 'problem' | 'envelope'): Promise<FastifyInstance> {
  const app = await createApp({ service: 'test', version: '1', errorShape, logLevel: 'silent', openapi: { title: 'test' } });
  app.get(
    '/items/:id',
    {
      schema: {
        params: { type: 'object', properties: { id: { type: 'string' } } },
        querystring: { type: 'object', properties: { page: { type: 'integer' } } },
        response: { 200: { type: 'object', properties: { id: { type: 'string' }, page: { type: 'integer' } } }, 403: {} },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      if (id === 'gone') throw notFound('Item gone not found');
      return { id, page: (request.query as { page?: number }).page };
    },
  );
  app.delete('/items/:id', async () => ({}));
  app.post(
    '/items',
    {
      schema: {
        body: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, size: { type: 'integer', maximum: 10 } } },
        response: { 201: { type: 'object', properties: { name: { type: 'string' } } } },
      },
    },
    async (request, reply) => reply.status(201).send(request.body),
  );
  await app.ready();
  return app;
}

describe('methods a path does not have', () => {
  let app: FastifyInstance;
  beforeAll(async () => (app = await build('problem')));
  afterAll(() => app.close());

  it('answers 405 with the methods it has in Allow, in the error shape', async () => {
    const put = await app.inject({ method: 'PUT', url: '/items/1', payload: { x: 1 } });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('DELETE, GET, HEAD');
    expect(put.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(put.json()).toMatchObject({ status: 405, type: 'https://boxyard.io/problems/method-not-allowed' });
  });

  it('answers 405 to a body-carrying method sent without Content-Type (QUERY), before reading the body', async () => {
    const query = await app.inject({ method: 'QUERY' as 'GET', url: '/items/1' });
    expect(query.statusCode).toBe(405);
    expect(query.headers.allow).toBe('DELETE, GET, HEAD');
  });

  it('documents 414 where a path parameter can be too long, and answers it in the error shape', async () => {
    const res = await app.inject({ method: 'GET', url: `/items/${'x'.repeat(200)}` });
    expect(res.statusCode).toBe(414);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  });

  it('still answers 404 for a path nobody serves, and for a resource its route did not find', async () => {
    expect((await app.inject({ method: 'GET', url: '/nothing/here' })).statusCode).toBe(404);
    const gone = await app.inject({ method: 'GET', url: '/items/gone' });
    expect(gone.statusCode).toBe(404);
    expect(gone.headers.allow).toBeUndefined();
  });
});

describe('type coercion', () => {
  let app: FastifyInstance;
  beforeAll(async () => (app = await build('envelope')));
  afterAll(() => app.close());

  it('refuses a JSON number where the body schema says string', async () => {
    const res = await app.inject({ method: 'POST', url: '/items', payload: { name: 12 } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, details: '/name: must be string' });
  });

  it('refuses numbers too large to be finite (1e400 is Infinity), in the query and in a body', async () => {
    const query = await app.inject({ method: 'GET', url: '/items/7?page=1e400' });
    expect(query.statusCode).toBe(400);
    expect(query.json().details).toBe('/query/page: must be a finite number');
    const body = await app.inject({ method: 'POST', url: '/items', headers: { 'content-type': 'application/json' }, payload: '{"name":"x","size":1e400}' });
    expect(body.statusCode).toBe(400);
    expect(body.json().details).toMatch(/^\/size: must be/);
  });

  it('still reads query and path values as the types their schema names', async () => {
    const res = await app.inject({ method: 'GET', url: '/items/7?page=2' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: '7', page: 2 });
  });
});

describe('errors in the OpenAPI description', () => {
  it('documents problem details as application/problem+json, with the statuses every route can answer', async () => {
    const app = await build('problem');
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const get = spec.paths['/items/{id}'].get.responses;
    expect(Object.keys(get).sort()).toEqual(['200', '400', '403', '404', '414', '422', '429', '503']);
    expect(Object.keys(get['404'].content)).toEqual(['application/problem+json']);
    expect(get['404'].content['application/problem+json'].schema.required).toEqual(['type', 'title', 'status', 'detail', 'errors']);
    // A body-taking route can also be sent too much or the wrong type; no path parameter, no 404.
    expect(Object.keys(spec.paths['/items'].post.responses).sort()).toEqual(['201', '400', '413', '415', '422', '429', '503']);
    // The answer really is what the description says.
    const served = await app.inject({ method: 'GET', url: '/items/gone' });
    expect(served.headers['content-type']).toMatch(/^application\/problem\+json/);
    await app.close();
  });

  it('documents the envelope as application/json', async () => {
    const app = await build('envelope');
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const notFoundResponse = spec.paths['/items/{id}'].get.responses['404'];
    expect(Object.keys(notFoundResponse.content)).toEqual(['application/json']);
    expect(notFoundResponse.content['application/json'].schema.required).toEqual(['success', 'message', 'details']);
    await app.close();
  });
});
