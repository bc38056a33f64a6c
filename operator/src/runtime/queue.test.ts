import { describe, expect, it } from 'vitest';
import { RateLimiter, WorkQueue } from './queue.ts';

describe('work queue', () => {
  it('collapses repeated events on one key into one pending item', async () => {
    const queue = new WorkQueue();
    queue.add('ns/a');
    queue.add('ns/b');
    queue.add('ns/a');
    queue.add('ns/a');
    expect(queue.length).toBe(2);
    expect(await queue.get()).toBe('ns/a');
    expect(await queue.get()).toBe('ns/b');
    expect(queue.length).toBe(0);
  });

  it('never hands out a key that is being processed; an event meanwhile requeues it for afterwards, once', async () => {
    const queue = new WorkQueue();
    queue.add('ns/a');
    const first = await queue.get();
    expect(first).toBe('ns/a');
    queue.add('ns/a'); // arrives during processing
    queue.add('ns/a');
    expect(queue.length).toBe(0); // not available to a second worker
    let second: string | undefined;
    const waiting = queue.get().then((key) => (second = key));
    await Promise.resolve();
    expect(second).toBeUndefined();
    queue.done('ns/a');
    await waiting;
    expect(second).toBe('ns/a');
    queue.done('ns/a');
    expect(queue.has('ns/a')).toBe(false);
  });

  it('hands a key to a waiting worker as soon as it is added', async () => {
    const queue = new WorkQueue();
    const next = queue.get();
    queue.add('ns/x');
    expect(await next).toBe('ns/x');
  });

  it('keeps the earliest due time when a delayed key is added again', async () => {
    const queue = new WorkQueue();
    queue.addAfter('ns/a', 60_000);
    queue.addAfter('ns/a', 5);
    queue.addAfter('ns/a', 30_000); // later: ignored
    expect(await queue.get()).toBe('ns/a');
  });

  it('resolves waiting workers with undefined on shutdown and ignores later adds', async () => {
    const queue = new WorkQueue();
    const next = queue.get();
    queue.shutdown();
    expect(await next).toBeUndefined();
    queue.add('ns/a');
    expect(await queue.get()).toBeUndefined();
  });
});

describe('rate limiter', () => {
  it('backs off exponentially per key up to the maximum, and forgets on success', () => {
    const limiter = new RateLimiter({ baseDelayMs: 100, maxDelayMs: 1000, qps: 1000, burst: 1000, now: () => 0 });
    expect([1, 2, 3, 4, 5, 6].map(() => limiter.when('a'))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(limiter.when('b')).toBe(100); // other keys are independent
    limiter.forget('a');
    expect(limiter.when('a')).toBe(100);
  });

  it('holds all keys together under the token bucket', () => {
    let now = 0;
    const limiter = new RateLimiter({ baseDelayMs: 1, maxDelayMs: 10_000, qps: 2, burst: 3, now: () => now });
    // Three distinct keys fit in the burst; the fourth and fifth wait for tokens at 2 per second.
    expect(['k1', 'k2', 'k3'].map((k) => limiter.when(k))).toEqual([1, 1, 1]);
    expect(limiter.when('k4')).toBe(500);
    expect(limiter.when('k5')).toBe(1000);
    now = 10_000; // the bucket refills up to its burst, not beyond
    expect(['k6', 'k7', 'k8'].map((k) => limiter.when(k))).toEqual([1, 1, 1]);
    expect(limiter.when('k9')).toBe(500);
  });

  it('never delays a retry beyond the maximum, however many keys failed at once', () => {
    const limiter = new RateLimiter({ baseDelayMs: 10, maxDelayMs: 5000, qps: 10, burst: 10, now: () => 0 });
    const delays = Array.from({ length: 1000 }, (_, i) => limiter.when(`key-${i}`));
    expect(Math.max(...delays)).toBe(5000);
    expect(delays.slice(0, 10)).toEqual(Array(10).fill(10));
    expect(delays[20]).toBe(1100); // the bucket spreads the rest at 10 per second
  });
});
