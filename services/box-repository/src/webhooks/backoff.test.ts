import { describe, expect, it } from 'vitest';
import { boxRepositoryConfigSchema } from '../config.ts';
import { retryDelaySeconds } from './backoff.ts';

const settings = { backoff_initial_seconds: 10, backoff_max_seconds: 3600 };

describe('retry backoff', () => {
  it('doubles per attempt, between half and all of the doubled delay', () => {
    expect([1, 2, 3, 4].map((n) => retryDelaySeconds(settings, n, () => 0))).toEqual([5, 10, 20, 40]);
    expect([1, 2, 3, 4].map((n) => retryDelaySeconds(settings, n, () => 1))).toEqual([10, 20, 40, 80]);
  });

  it('never waits longer than the maximum, however many attempts failed', () => {
    expect(retryDelaySeconds(settings, 9, () => 1)).toBe(2560);
    expect(retryDelaySeconds(settings, 10, () => 1)).toBe(3600);
    expect(retryDelaySeconds(settings, 5000, () => 1)).toBe(3600);
  });

  it('spreads retries of the same attempt apart (jitter)', () => {
    const delays = new Set(Array.from({ length: 20 }, () => retryDelaySeconds(settings, 3)));
    expect(delays.size).toBeGreaterThan(1);
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(20);
      expect(delay).toBeLessThanOrEqual(40);
    }
  });

  it('is configured with an initial delay no longer than the maximum', () => {
    const base = { database: { url: 'postgres://x@127.0.0.1/x' }, storage: { driver: 'local', root: '/tmp/x' }, session: { secret: 'x'.repeat(43) } };
    expect(boxRepositoryConfigSchema.parse(base).webhooks).toMatchObject({
      backoff_initial_seconds: 10,
      backoff_max_seconds: 3600,
      max_attempts: 8,
      allow_private_targets: false,
    });
    const wrong = boxRepositoryConfigSchema.safeParse({ ...base, webhooks: { backoff_initial_seconds: 60, backoff_max_seconds: 30 } });
    expect(wrong.success).toBe(false);
    expect(wrong.error?.issues[0]).toMatchObject({ path: ['webhooks', 'backoff_initial_seconds'], message: 'must not be more than backoff_max_seconds' });
  });
});
