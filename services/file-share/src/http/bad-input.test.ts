// What the fuzzer (test/fuzz) found: the service's own paths answering a method they lack through the share's
// catch-all, a page number past what PostgreSQL holds, and answers missing from the OpenAPI description.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, postJson, startTestShare, type TestShare } from '../testing/test-share.ts';

let test: TestShare;
beforeAll(async () => (test = await startTestShare({ storage: 'local' })));
afterAll(() => test?.close());

describe("the service's own paths", () => {
  it('answer 405 with Allow to a method they lack, instead of the share reading the body as a rename', async () => {
    const res = await postJson(test.url, '/api/users', { newName: 'x' }, adminAuth, 'PUT');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    const key = await fetch(`${test.url}/api/api-keys/123`, { method: 'POST', headers: { authorization: adminAuth } });
    expect(key.status).toBe(405);
    expect(key.headers.get('allow')).toBe('DELETE, PUT');
  });

  it('advertise only their own methods in Allow, also to a method no route has (OPTIONS)', async () => {
    const res = await fetch(`${test.url}/api/users`, { method: 'OPTIONS', headers: { authorization: adminAuth } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('answer 404 under a reserved name nothing serves, for any method', async () => {
    const res = await postJson(test.url, '/api/nothing', { newName: 'x' }, adminAuth, 'PUT');
    expect(res.status).toBe(404);
  });
});

describe('pages past what the database holds', () => {
  it('refuses page 2^63 with 400, not 500', async () => {
    const res = await fetch(`${test.url}/?format=json&page=9223372036854775808`, { headers: { authorization: adminAuth } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ success: false, details: expect.stringContaining('/query/page') });
  });
});

describe('the OpenAPI description', () => {
  it('documents what the routes answer: 201 for a new user, 401/403 everywhere behind authentication', async () => {
    const spec = (await (await fetch(`${test.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(spec.paths['/api/users']!.post!.responses)).toEqual(expect.arrayContaining(['201', '401', '403', '409']));
    expect(Object.keys(spec.paths['/{*}']!.delete!.responses)).toEqual(expect.arrayContaining(['401', '403', '404']));
    expect(Object.keys(spec.paths['/{*}']!.get!.responses)).toEqual(expect.arrayContaining(['200', '206', '301', '304', '416']));
  });
});
