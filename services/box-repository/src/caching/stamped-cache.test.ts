// The stamped cache alone: a value only for the stamp it was kept with; bounded by entries and by the bytes its
// caller counts (the search's documents test the same through their own keys: search-document-cache.test.ts).
import { describe, expect, it } from 'vitest';
import { createStampedCache } from './stamped-cache.ts';

describe('stamped cache', () => {
  it('answers a value only for its key and stamp; a new stamp replaces the old', () => {
    const cache = createStampedCache<string>({ maxEntries: 10, maxBytes: 10_000 });
    cache.set('box 1', '7 org box', '<article>v1</article>', 42);
    expect(cache.get('box 1', '7 org box')).toBe('<article>v1</article>');
    expect(cache.get('box 1', '8 org box')).toBeUndefined();
    expect(cache.get('box 2', '7 org box')).toBeUndefined();
    cache.set('box 1', '8 org box', '<article>v2</article>', 42);
    expect(cache.get('box 1', '7 org box')).toBeUndefined();
    expect(cache.get('box 1', '8 org box')).toBe('<article>v2</article>');
    expect(cache.size).toBe(1);
  });

  it('counts the bytes its caller gives, and keeps none over an eighth of the bound', () => {
    const cache = createStampedCache<string>({ maxEntries: 100, maxBytes: 8000 });
    for (let id = 1; id <= 20; id++) cache.set(`k${id}`, 's', 'x', 900);
    expect(cache.bytes).toBeLessThanOrEqual(8000);
    expect(cache.get('k12', 's')).toBeUndefined();
    expect(cache.get('k13', 's')).toBe('x');
    cache.set('huge', 's', 'x', 1000);
    expect(cache.get('huge', 's')).toBeUndefined();
    expect(cache.get('k20', 's')).toBe('x');
  });
});
