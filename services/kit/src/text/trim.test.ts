import { describe, expect, it } from 'vitest';
import { trimLeading, trimTrailing, withoutTrailingSlashes } from './trim.ts';

describe('trimming runs', () => {
  it.each([
    ['https://a/b//', 'https://a/b'],
    ['https://a/b', 'https://a/b'],
    ['///', ''],
    ['', ''],
    ['a/b/c/', 'a/b/c'],
  ])('withoutTrailingSlashes(%j) = %j', (value, expected) => {
    expect(withoutTrailingSlashes(value)).toBe(expected);
  });

  it('trims any of several characters, only at its end or start', () => {
    expect(trimTrailing('jo.hn_@-.', '._@-')).toBe('jo.hn');
    expect(trimLeading('//a/b/', '/')).toBe('a/b/');
    expect(trimTrailing('-', '-')).toBe('');
  });

  it('keeps a long run that is not at the end', () => {
    const run = `${'/'.repeat(100_000)}a`;
    expect(withoutTrailingSlashes(run)).toBe(run);
  });
});
