import { describe, expect, it } from 'vitest';
import type { HttpError } from './http-error.ts';
import { createStreamLimits } from './stream-limits.ts';

const statusOf = (fn: () => unknown) => {
  try {
    fn();
    return 200;
  } catch (error) {
    return (error as HttpError).statusCode;
  }
};

describe('createStreamLimits', () => {
  it('holds each holder to its cap (429) and everyone to the total (503); a release frees one slot, once', () => {
    const limits = createStreamLimits({ what: 'streams', perHolder: 2, total: 3, retryAfterSeconds: 7 });
    const a1 = limits.claim('a');
    limits.claim('a');
    expect(statusOf(() => limits.claim('a'))).toBe(429);
    limits.claim('b');
    expect(statusOf(() => limits.claim('c'))).toBe(503);
    try {
      limits.claim('c');
    } catch (error) {
      expect((error as HttpError).headers).toEqual({ 'retry-after': '7' });
    }
    a1();
    a1();
    expect([limits.open(), limits.open('a')]).toEqual([2, 1]);
    expect(statusOf(() => limits.claim('c'))).toBe(200);
    expect(statusOf(() => limits.claim('c'))).toBe(503);
  });
});
