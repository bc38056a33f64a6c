// The tus header parsers (pure): what is accepted, and that every malformed value is a 400 (412 / 415 where the
// protocol says so), never a throw of another kind.
import { HttpError } from '@boxyard/kit';
import { describe, expect, it } from 'vitest';
import { integerHeader, parseChecksum, parseMetadata, requireOffsetStream, requireTusVersion } from './tus-headers.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const statusOf = (run: () => unknown): number | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    return (error as HttpError).statusCode;
  }
};

describe('tus headers', () => {
  it('parses Upload-Metadata pairs, keys alone as empty values, UTF-8 text', () => {
    expect(parseMetadata(undefined)).toEqual({});
    expect(parseMetadata(`filename ${b64('Отчёт 2026.pdf')},folder ${b64('/docs')}, is_confidential`)).toEqual({
      filename: 'Отчёт 2026.pdf',
      folder: '/docs',
      is_confidential: '',
    });
  });

  it('refuses malformed Upload-Metadata with 400', () => {
    for (const header of [
      'a b c',
      'a !!!!',
      `a ${b64('x')},a ${b64('y')}`,
      ',',
      `k\u00e9y ${b64('x')}`,
      `a ${b64('x\u0000y')}`,
      `a ${Buffer.from([0xc3, 0x28]).toString('base64')}`,
      'a YQ',
      `${'k,'.repeat(40)}`,
      `a ${'A'.repeat(5000)}`,
    ]) {
      expect(
        statusOf(() => parseMetadata(header)),
        header.slice(0, 40),
      ).toBe(400);
    }
  });

  it('Upload-Checksum: sha1 and sha256 with a digest of the right length; anything else 400', () => {
    const sha1 = Buffer.alloc(20, 1).toString('base64');
    const sha256 = Buffer.alloc(32, 2).toString('base64');
    expect(parseChecksum({ 'upload-checksum': `sha1 ${sha1}` })).toEqual({ algorithm: 'sha1', hex: '01'.repeat(20) });
    expect(parseChecksum({ 'upload-checksum': `sha256 ${sha256}` })).toEqual({ algorithm: 'sha256', hex: '02'.repeat(32) });
    expect(parseChecksum({})).toBeUndefined();
    for (const value of [`md5 ${sha1}`, `sha1 ${sha256}`, 'sha256', `sha256 ${sha256} extra`, 'sha1 !!!!'])
      expect(
        statusOf(() => parseChecksum({ 'upload-checksum': value })),
        value,
      ).toBe(400);
  });

  it('versions, content types and integers', () => {
    expect(statusOf(() => requireTusVersion({ 'tus-resumable': '1.0.0' }))).toBeUndefined();
    expect(statusOf(() => requireTusVersion({}))).toBe(412);
    expect(statusOf(() => requireTusVersion({ 'tus-resumable': '0.2.2' }))).toBe(412);
    expect(statusOf(() => requireOffsetStream({ 'content-type': 'application/offset+octet-stream; charset=x' }))).toBeUndefined();
    expect(statusOf(() => requireOffsetStream({ 'content-type': 'application/octet-stream' }))).toBe(415);
    expect(integerHeader({ 'upload-offset': '42' }, 'upload-offset')).toBe(42);
    expect(integerHeader({}, 'upload-offset')).toBeUndefined();
    for (const value of ['-1', '1.5', '0x10', '', '99999999999999999'])
      expect(
        statusOf(() => integerHeader({ 'upload-offset': value }, 'upload-offset')),
        value,
      ).toBe(400);
  });
});
