// One key grammar for both drivers. The local driver maps keys to paths, so anything a path would interpret
// (`..`, `.`, empty segments, absolute paths, backslashes, NUL) is refused; the s3 driver refuses the same
// keys so data can move between drivers unchanged.
import { InvalidKeyError } from './errors.ts';

const maxKeyBytes = 1024; // S3's limit on a whole key
const maxSegmentBytes = 255; // NAME_MAX of common filesystems, also enforced by MinIO
// eslint-disable-next-line no-control-regex
const controlCharacters = /[\u0000-\u001f\u007f]/; // NUL breaks paths, the rest can't travel in S3's XML listings

function checkCharacters(value: string): void {
  if (controlCharacters.test(value)) throw new InvalidKeyError(value, 'control characters (NUL included) are not allowed');
  if (value.includes('\\')) throw new InvalidKeyError(value, 'backslashes are not allowed');
  if (Buffer.byteLength(value) > maxKeyBytes) throw new InvalidKeyError(value, `longer than ${maxKeyBytes} bytes`);
}

function checkSegments(value: string, segments: string[]): void {
  for (const segment of segments) {
    if (segment === '') throw new InvalidKeyError(value, 'empty segment (leading, trailing or double slash)');
    if (segment === '.' || segment === '..') throw new InvalidKeyError(value, `"${segment}" segments are not allowed`);
    if (Buffer.byteLength(segment) > maxSegmentBytes) throw new InvalidKeyError(value, `a segment is longer than ${maxSegmentBytes} bytes`);
  }
}

/** Throws InvalidKeyError unless `key` is a valid object key; returns it for chaining. */
export function validateKey(key: string): string {
  if (typeof key !== 'string' || key === '') throw new InvalidKeyError(String(key), 'empty');
  checkCharacters(key);
  checkSegments(key, key.split('/'));
  return key;
}

/**
 * Validates a listing prefix: '' (everything), or whole valid segments followed by an optional partial last
 * segment ('boxes/ub' matches 'boxes/ubuntu/...'), which is only compared as a string, never used as a path.
 */
export function validatePrefix(prefix: string): string {
  if (typeof prefix !== 'string') throw new InvalidKeyError(String(prefix), 'not a string');
  if (prefix === '') return prefix;
  checkCharacters(prefix);
  const segments = prefix.split('/');
  segments.pop(); // the partial tail
  checkSegments(prefix, segments);
  return prefix;
}
