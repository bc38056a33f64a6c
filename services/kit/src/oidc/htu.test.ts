// htu comparison (RFC 9449 §4.3 check 9, RFC 3986 §6.2.2-6.2.3): pure functions, no components.
import { describe, expect, it } from 'vitest';
import { expectedHtu, normalizeHtu } from './htu.ts';

describe('htu normalisation', () => {
  it('lower-cases scheme and host, drops the default port, query and fragment, and normalises percent-encoding', () => {
    expect(normalizeHtu('HTTPS://Boxes.Example.TEST:443/a/b?x=1#y')).toBe('https://boxes.example.test/a/b');
    expect(normalizeHtu('http://h.test:80')).toBe('http://h.test/');
    expect(normalizeHtu('https://h.test:8443/a')).toBe('https://h.test:8443/a');
    expect(normalizeHtu('https://h.test/%7euser/a%2fb/./c/../d')).toBe('https://h.test/~user/a%2Fb/d');
    expect(normalizeHtu('https://user:pw@h.test/a')).toBe('https://h.test/a');
    expect(normalizeHtu('ftp://h.test/a')).toBeUndefined();
    expect(normalizeHtu('/a/b')).toBeUndefined();
  });

  it('builds the expected URI from the public URL and the request path, never doubling a path prefix', () => {
    expect(expectedHtu('https://boxes.example.test', '/api/x?y=1')).toBe('https://boxes.example.test/api/x');
    expect(expectedHtu('https://example.test/boxes/', '/api/x')).toBe('https://example.test/boxes/api/x');
    expect(expectedHtu('https://example.test/boxes', '/boxes/api/x')).toBe('https://example.test/boxes/api/x');
    expect(expectedHtu('https://Example.TEST:443', '/')).toBe('https://example.test/');
  });
});
