// GET /events is capped per user (or key, or anonymous address) and in total on each replica (issue 27 item 6):
// one caller, or a crowd, could otherwise hold every socket of the process with streams that never end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, createUser, startTestShare, type TestShare } from '../testing/test-share.ts';

let test: TestShare;
beforeAll(async () => (test = await startTestShare({ storage: 'local', overrides: { events: { max_streams_per_user: 2, max_streams: 3 } } })));
afterAll(() => test?.close());

/** Opens GET /events and returns its status and a way to hang up (the stream itself is left unread). */
async function openStream(authorization: string): Promise<{ status: number; body: unknown; headers: Headers; close: () => void }> {
  const controller = new AbortController();
  const response = await fetch(`${test.url}/events`, { headers: { authorization }, signal: controller.signal });
  const body = response.status === 200 ? undefined : await response.json();
  return { status: response.status, body, headers: response.headers, close: () => controller.abort() };
}

async function eventually<T>(attempt: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const value = await attempt();
    if (done(value) || i > 100) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('event stream caps', () => {
  it('answers 429 beyond the per-user cap and 503 beyond the total, in the envelope, and frees slots on hang-up', async () => {
    const alice = await createUser(test.url, 'alice', 'user');
    const bob = await createUser(test.url, 'bob', 'user');
    const first = await openStream(alice.authorization);
    const second = await openStream(alice.authorization);
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await openStream(alice.authorization);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(third.body).toEqual({
      success: false,
      message: expect.stringContaining('too many open event streams for this caller'),
      details: 'Too many requests',
    });

    // Another user still gets one: the cap is per user ...
    const bobs = await openStream(bob.authorization);
    expect(bobs.status).toBe(200);
    // ... until the replica's total is reached.
    const admins = await openStream(adminAuth);
    expect(admins.status).toBe(503);
    expect(admins.body).toMatchObject({ success: false, message: expect.stringContaining('too many open event streams on this server') });

    // A stream that ends gives its slot back.
    first.close();
    const again = await eventually(
      () => openStream(alice.authorization),
      (s) => s.status === 200,
    );
    expect(again.status).toBe(200);
    for (const stream of [second, bobs, again]) stream.close();
  });
});
