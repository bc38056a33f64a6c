import { describe, expect, it } from 'vitest';
import { HttpError } from '@boxyard/kit';
import { checkNewPath, encodePath, isWithin, joinPath, parentOf, parseRequestPath, relativeHref, validateName, validateSharePath } from './share-path.ts';

const refused = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).statusCode).toBe(400);
    return (error as HttpError).errors[0]?.detail ?? '';
  }
  throw new Error('expected a 400');
};

describe('parseRequestPath', () => {
  it('decodes each segment exactly once and keeps names as given', () => {
    expect(parseRequestPath('/')).toEqual({ segments: [], path: '/', trailingSlash: true });
    expect(parseRequestPath('/docs/')).toEqual({ segments: ['docs'], path: '/docs', trailingSlash: true });
    expect(parseRequestPath('/a%20b/c%2Bd+e.txt')).toEqual({ segments: ['a b', 'c+d+e.txt'], path: '/a b/c+d+e.txt', trailingSlash: false });
    // Unicode is kept as is, NFC and NFD stay distinct.
    expect(parseRequestPath('/caf%C3%A9').path).toBe('/caf\u00e9');
    expect(parseRequestPath('/cafe%CC%81').path).toBe('/cafe\u0301');
    expect(parseRequestPath('/100%25').path).toBe('/100%');
    expect(parseRequestPath('/...').path).toBe('/...');
    expect(parseRequestPath('/.hidden').path).toBe('/.hidden');
  });

  it.each([
    ['/..', '".."'],
    ['/a/../b', '".."'],
    ['/a/./b', '"."'],
    ['/%2e%2e/etc', '".."'],
    ['/%2E%2E', '".."'],
    ['/a/%2e', '"."'],
    ['/a%2fb', 'must not contain "/"'],
    ['/..%2f..%2fetc', 'must not contain "/"'],
    ['/%252e%252e/x', 'double encoding'],
    ['/a%252fb', 'double encoding'],
    ['/a%2500', 'double encoding'],
    ['/a//b', 'empty'],
    ['//etc/passwd', 'empty'],
    ['/a\\b', 'backslashes'],
    ['/a%5c..%5cb', 'backslashes'],
    ['/a%00b', 'control characters'],
    ['/a%0Ab', 'control characters'],
    ['/a%7F', 'control characters'],
    ['/a%C2%85', 'control characters'],
    ['/a%zz', 'malformed'],
    ['/a%C3', 'malformed'],
    ['/%ED%A0%80', 'malformed'],
    ['relative', 'start with'],
  ])('refuses %s', (raw, reason) => {
    expect(refused(() => parseRequestPath(raw))).toContain(reason);
  });

  it('limits names to 255 bytes and paths to 4096 bytes', () => {
    expect(parseRequestPath(`/${'a'.repeat(255)}`).segments[0]).toHaveLength(255);
    expect(refused(() => parseRequestPath(`/${'a'.repeat(256)}`))).toContain('255 bytes');
    // 128 x "é" is 256 bytes in UTF-8 though only 128 characters.
    expect(refused(() => parseRequestPath(`/${'%C3%A9'.repeat(128)}`))).toContain('255 bytes');
    const segment = 'b'.repeat(200);
    const deep = `/${Array.from({ length: 20 }, () => segment).join('/')}`;
    expect(parseRequestPath(deep).segments).toHaveLength(20);
    const tooDeep = `/${Array.from({ length: 21 }, () => segment).join('/')}`;
    expect(refused(() => parseRequestPath(tooDeep))).toContain('4096 bytes');
  });
});

describe('names from bodies', () => {
  it('accepts plain and Unicode names', () => {
    expect(validateName('Report 2024 (final).pdf', '/newName')).toBe('Report 2024 (final).pdf');
    expect(validateName('日本語', '/folderName')).toBe('日本語');
  });

  it.each([['a/b'], ['..'], ['.'], [''], ['a\\b'], ['a\u0000b'], ['%2e%2e'], ['\ud800'], ['x'.repeat(256)]])('refuses %j', (name) => {
    refused(() => validateName(name, '/folderName'));
  });

  it('refuses non-strings', () => {
    refused(() => validateName(42, '/newName'));
  });

  // Issue 27 item 14: names that display as something else.
  it.each([
    ['right-to-left override (invoice\u202Etxt.exe shows as invoiceexe.txt)', 'invoice\u202Etxt.exe', 'bidirectional'],
    ['left-to-right embedding', 'a\u202Ab', 'bidirectional'],
    ['right-to-left isolate', 'a\u2067b', 'bidirectional'],
    ['right-to-left mark', 'report\u200F.pdf', 'bidirectional'],
    ['zero-width space', 'pay\u200Bpal', 'invisible'],
    ['byte-order mark', '\uFEFFname', 'invisible'],
    ['soft hyphen', 'pass\u00ADwords', 'invisible'],
    ['Cyrillic а inside a Latin word', 'p\u0430ypal.pdf', 'mix'],
    ['Greek ο inside a Latin word', 'g\u03BFogle', 'mix'],
    ['a decomposed é (NFD)', 'cafe\u0301.txt', 'NFC'],
  ])('refuses a new name with %s', (_what, name, reason) => {
    expect(refused(() => validateName(name, '/folderName'))).toContain(reason);
    expect(refused(() => checkNewPath(`/docs/${name}`))).toContain(reason);
  });

  it('accepts names in one script per word, joiners where scripts need them, and NFC accents', () => {
    for (const name of [
      'Отчёт report 2024.pdf',
      'Ελληνικά-notes.txt',
      'café.txt',
      'می\u200Cخواهم.txt',
      '👨\u200D👩\u200D👧 photos',
      'नमस्ते',
      '日本語 ファイル',
    ]) {
      expect(validateName(name, '/folderName')).toBe(name);
      expect(() => checkNewPath(`/docs/${name}`)).not.toThrow();
    }
  });

  it('still reads existing entries whose names the new rules refuse (they stay reachable, and deletable)', () => {
    expect(parseRequestPath(`/${encodeURIComponent('cafe\u0301')}/${encodeURIComponent('a\u202Eb')}`).segments).toEqual(['cafe\u0301', 'a\u202Eb']);
  });

  it('validates share paths given in JSON (key scopes)', () => {
    expect(validateSharePath('/', '/scope')).toBe('/');
    expect(validateSharePath('/team/docs/', '/scope')).toBe('/team/docs');
    refused(() => validateSharePath('team', '/scope'));
    refused(() => validateSharePath('/team/../etc', '/scope'));
    refused(() => validateSharePath('/team//x', '/scope'));
  });
});

describe('path helpers', () => {
  it('joins, splits and compares by whole segments', () => {
    expect(joinPath('/', 'a')).toBe('/a');
    expect(joinPath('/a', 'b')).toBe('/a/b');
    expect(parentOf('/a/b')).toBe('/a');
    expect(parentOf('/a')).toBe('/');
    expect(isWithin('/a/b', '/a')).toBe(true);
    expect(isWithin('/a', '/a')).toBe(true);
    expect(isWithin('/ab', '/a')).toBe(false);
    expect(isWithin('/anything', '/')).toBe(true);
  });

  it('reserves the names of the service routes at the top level only', () => {
    expect(refused(() => checkNewPath('/health'))).toContain('reserved');
    expect(refused(() => checkNewPath('/api'))).toContain('reserved');
    expect(() => checkNewPath('/docs/health')).not.toThrow();
    expect(() => checkNewPath('/healthy')).not.toThrow();
  });

  it('encodes links so that every name reads back as itself', () => {
    expect(encodePath('/a b/c?d#e', false)).toBe('/a%20b/c%3Fd%23e');
    expect(encodePath('/dir', true)).toBe('/dir/');
    expect(relativeHref('javascript:alert(1)', false)).toBe('javascript%3Aalert(1)');
    expect(relativeHref('x"><script>', true)).toBe('x%22%3E%3Cscript%3E/');
    for (const name of ['a b', 'ü', '100%', 'a+b', '#1', '?q']) {
      expect(parseRequestPath(`/${relativeHref(name, false)}`).segments).toEqual([name]);
    }
  });
});
