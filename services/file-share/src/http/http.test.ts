import { describe, expect, it } from 'vitest';
import { contentTypeFor } from './content-types.ts';
import { listingFormat, wantsHtmlPage } from './negotiate.ts';

describe('negotiation', () => {
  it.each([
    [undefined, undefined, 'html'],
    [undefined, '*/*', 'html'],
    [undefined, 'application/json', 'json'],
    [undefined, 'application/json, text/html;q=0.9', 'json'],
    [undefined, 'text/html, application/json', 'html'],
    [undefined, 'text/html;q=0.1, application/*', 'json'],
    [undefined, 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'html'],
    ['json', 'text/html', 'json'],
    ['html', 'application/json', 'html'],
  ] as const)('format=%s accept=%s -> %s', (format, accept, expected) => {
    expect(listingFormat(format, accept)).toBe(expected);
  });

  it('treats only explicit HTML preference as a browser', () => {
    expect(wantsHtmlPage('text/html,*/*;q=0.8')).toBe(true);
    expect(wantsHtmlPage('*/*')).toBe(false);
    expect(wantsHtmlPage(undefined)).toBe(false);
    expect(wantsHtmlPage('application/json')).toBe(false);
  });

  it('maps extensions to content types, unknown to octet-stream', () => {
    expect(contentTypeFor('a.TXT')).toBe('text/plain; charset=utf-8');
    expect(contentTypeFor('archive.tar.gz')).toBe('application/gzip');
    expect(contentTypeFor('.bashrc')).toBe('application/octet-stream');
    expect(contentTypeFor('noext')).toBe('application/octet-stream');
  });
});
