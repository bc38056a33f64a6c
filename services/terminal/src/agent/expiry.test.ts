import { describe, expect, it } from 'vitest';
import { expiryReason } from './expiry.ts';

const limits = { idleTimeoutMs: 60_000, reattachGraceMs: 10_000 };
const base = { now: 1_000_000, expiresAt: 2_000_000, lastActivityAt: 1_000_000, attached: 1, detachedSince: null };

describe('session expiry', () => {
  it('keeps an active attached session', () => {
    expect(expiryReason(base, limits)).toBeNull();
  });
  it('ends a session at its absolute lifetime, active or not', () => {
    expect(expiryReason({ ...base, now: 2_000_000 }, limits)).toBe('lifetime');
  });
  it('ends a session idle for the idle time-out, even with a socket attached', () => {
    expect(expiryReason({ ...base, lastActivityAt: base.now - 59_999 }, limits)).toBeNull();
    expect(expiryReason({ ...base, lastActivityAt: base.now - 60_000 }, limits)).toBe('idle_timeout');
  });
  it('ends a session nobody reattached to within the grace period', () => {
    const detached = { ...base, attached: 0 };
    expect(expiryReason({ ...detached, detachedSince: base.now - 9_999 }, limits)).toBeNull();
    expect(expiryReason({ ...detached, detachedSince: base.now - 10_000 }, limits)).toBe('reattach_grace');
  });
});
