// The OpenAPI description declares what GET /events serves: a text/event-stream (schemathesis found it undeclared).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminAuth, startTestShare, type TestShare } from '../testing/test-share.ts';
import { ignoreError } from '@boxyard/kit';

let share: TestShare;
beforeAll(async () => {
  share = await startTestShare({ storage: 'local' });
});
afterAll(() => share?.close());

type Operation = { responses: Record<string, { content?: Record<string, unknown> }> };

it('declares the event stream it serves, and the envelope of its refusals', async () => {
  const description = (await (await fetch(`${share.url}/openapi.json`)).json()) as { paths: Record<string, { get: Operation }> };
  const events = description.paths['/events']!.get;
  const stop = new AbortController();
  const response = await fetch(`${share.url}/events`, { headers: { authorization: adminAuth }, signal: stop.signal });
  expect(response.status).toBe(200);
  const served = response.headers.get('content-type')!.split(';')[0]!;
  expect(served).toBe('text/event-stream');
  expect(Object.keys(events.responses['200']!.content ?? {})).toEqual([served]);
  stop.abort();
  await response.body?.cancel().catch(ignoreError('teardown: the stream may be closed'));
  const refused = await fetch(`${share.url}/events`);
  expect(refused.status).toBe(401);
  expect(Object.keys(events.responses['401']!.content ?? {})).toContain(refused.headers.get('content-type')!.split(';')[0]);
});
