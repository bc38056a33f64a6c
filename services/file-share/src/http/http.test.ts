import { describe, expect, it } from 'vitest';
import { parseRange } from './byte-range.ts';
import { contentTypeFor } from './content-types.ts';
import { listingFormat, wantsHtmlPage } from './negotiate.ts';

describe('parseRange', () => {
  it.each([
    ['bytes=0-9', { kind: 'range', start: 0, end: 9 }],
    ['bytes=90-', { kind: 'range', start: 90, end: 99 }],
    ['bytes=-10', { kind: 'range', start: 90, end: 99 }],
    ['bytes=-500', { kind: 'range', start: 0, end: 99 }],
    ['bytes=50-500', { kind: 'range', start: 50, end: 99 }],
    ['bytes=100-', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=0-1,5-6', { kind: 'none' }],
    ['bytes=9-1', { kind: 'none' }],
    ['items=0-1', { kind: 'none' }],
    ['bytes=-', { kind: 'none' }],
    [undefined, { kind: 'none' }],
  ])('%s of 100 bytes', (header, expected) => {
    expect(parseRange(header, 100)).toEqual(expected);
  });

  it('ignores ranges on empty files', () => {
    expect(parseRange('bytes=0-0', 0)).toEqual({ kind: 'none' });
  });
});

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
