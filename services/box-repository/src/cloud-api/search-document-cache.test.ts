// The search document cache alone: a fragment only for the stamp it was stored with, and its bounds (entries and
// bytes, the oldest going first; a fragment too big for an eighth of it is not kept).
import { describe, expect, it } from 'vitest';
import { createSearchDocumentCache } from './search-document-cache.ts';

describe('search document cache', () => {
  it('answers a fragment only for its box, flavour, base and stamp', () => {
    const cache = createSearchDocumentCache();
    cache.set(1, 'v1', 'http://a', '10.20', '{"name":"one"}');
    expect(cache.get(1, 'v1', 'http://a', '10.20')?.toString()).toBe('{"name":"one"}');
    expect(cache.get(1, 'v1', 'http://a', '11.20')).toBeUndefined();
    expect(cache.get(1, 'v2', 'http://a', '10.20')).toBeUndefined();
    expect(cache.get(1, 'v1', 'http://b', '10.20')).toBeUndefined();
    expect(cache.get(2, 'v1', 'http://a', '10.20')).toBeUndefined();
    cache.set(1, 'v1', 'http://a', '11.20', '{"name":"new"}');
    expect(cache.get(1, 'v1', 'http://a', '11.20')?.toString()).toBe('{"name":"new"}');
    expect(cache.size).toBe(1);
  });

  it('keeps at most its entries and bytes, dropping the oldest first', () => {
    const cache = createSearchDocumentCache({ maxEntries: 3, maxBytes: 8000 });
    for (let id = 1; id <= 5; id++) cache.set(id, 'v1', 'b', 's', 'x'.repeat(100));
    expect(cache.size).toBe(3);
    expect(cache.get(2, 'v1', 'b', 's')).toBeUndefined();
    expect(cache.get(3, 'v1', 'b', 's')).toBeDefined();
    const big = createSearchDocumentCache({ maxEntries: 100, maxBytes: 8000 });
    for (let id = 1; id <= 20; id++) big.set(id, 'v1', 'b', 's', 'x'.repeat(900));
    expect(big.bytes).toBeLessThanOrEqual(8000);
    expect(big.size).toBe(8);
    expect(big.get(12, 'v1', 'b', 's')).toBeUndefined();
    expect(big.get(13, 'v1', 'b', 's')).toBeDefined();
    // 1,000 bytes is over an eighth of 8,000: built per request, not kept.
    big.set(21, 'v1', 'b', 's', 'x'.repeat(1000));
    expect(big.get(21, 'v1', 'b', 's')).toBeUndefined();
    expect(big.get(20, 'v1', 'b', 's')).toBeDefined();
  });
});
