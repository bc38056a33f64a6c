// The tus 1.0 request headers, parsed and bounded: every malformed value is a 400 (412 for another protocol
// version, 415 for a PATCH body of another type), never a 500 and never a partial parse.
import { badRequest, HttpError } from '@boxyard/kit';
import type { IncomingHttpHeaders } from 'node:http';

export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = 'creation,creation-with-upload,expiration,termination,checksum';
export const CHECKSUM_ALGORITHMS = ['sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];
export const OFFSET_CONTENT_TYPE = 'application/offset+octet-stream';

const MAX_METADATA_BYTES = 4096;
const MAX_METADATA_PAIRS = 32;
const KEY = /^[A-Za-z0-9_.-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DIGITS = /^\d{1,16}$/;

const one = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** Every request but OPTIONS names the protocol version; another one is 412 with the versions we speak. */
export function requireTusVersion(headers: IncomingHttpHeaders): void {
  const version = one(headers, 'tus-resumable');
  if (version === TUS_VERSION) return;
  throw new HttpError(
    412,
    version === undefined ? 'Tus-Resumable: 1.0.0 is required' : `Unsupported tus version ${JSON.stringify(version.slice(0, 32))}; this server speaks 1.0.0`,
    {
      headers: { 'tus-version': TUS_VERSION },
    },
  );
}

/** A non-negative integer header (Upload-Length, Upload-Offset); undefined when absent. */
export function integerHeader(headers: IncomingHttpHeaders, name: string): number | undefined {
  const value = one(headers, name);
  if (value === undefined) return undefined;
  if (!DIGITS.test(value.trim())) throw badRequest(`${name} must be a non-negative integer`);
  const number = Number(value.trim());
  if (!Number.isSafeInteger(number)) throw badRequest(`${name} is too large`);
  return number;
}

export const isOffsetStream = (headers: IncomingHttpHeaders): boolean =>
  (one(headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase() === OFFSET_CONTENT_TYPE;

export function requireOffsetStream(headers: IncomingHttpHeaders): void {
  if (!isOffsetStream(headers)) throw new HttpError(415, `A PATCH body is Content-Type: ${OFFSET_CONTENT_TYPE}`);
}

/**
 * Upload-Metadata: `key base64value` pairs separated by commas (a key alone means an empty value). Keys are
 * plain ASCII names, values strict base64 of UTF-8 text; duplicates, empty pairs and oversized headers are refused.
 */
export function parseMetadata(header: string | undefined): Record<string, string> {
  const metadata: Record<string, string> = {};
  if (header === undefined || header.trim() === '') return metadata;
  if (header.length > MAX_METADATA_BYTES) throw badRequest(`Upload-Metadata is longer than ${MAX_METADATA_BYTES} bytes`);
  const pairs = header.split(',');
  if (pairs.length > MAX_METADATA_PAIRS) throw badRequest(`Upload-Metadata has more than ${MAX_METADATA_PAIRS} pairs`);
  for (const pair of pairs) {
    const parts = pair.trim().split(' ');
    const [key, value = ''] = parts;
    if (parts.length > 2 || !key || !KEY.test(key))
      throw badRequest('Upload-Metadata is malformed: each pair is "key base64value", keys are letters, digits, "_", "." or "-"');
    if (Object.hasOwn(metadata, key)) throw badRequest(`Upload-Metadata names ${key} twice`);
    if (!BASE64.test(value) || value.length % 4 !== 0) throw badRequest(`Upload-Metadata value of ${key} is not base64`);
    const bytes = Buffer.from(value, 'base64');
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw badRequest(`Upload-Metadata value of ${key} is not UTF-8 text`);
    }
    if (text.includes('\0')) throw badRequest(`Upload-Metadata value of ${key} contains a NUL character`);
    metadata[key] = text;
  }
  return metadata;
}

export interface ChecksumHeader {
  algorithm: ChecksumAlgorithm;
  /** Lower-case hex of the announced digest. */
  hex: string;
}

/** Upload-Checksum: `<algorithm> <base64 digest>`; 400 for an algorithm we don't support or a malformed digest. */
export function parseChecksum(headers: IncomingHttpHeaders): ChecksumHeader | undefined {
  const value = one(headers, 'upload-checksum');
  if (value === undefined) return undefined;
  const [algorithm, digest, extra] = value.trim().split(' ');
  if (!(CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm ?? '')) {
    throw badRequest(`Upload-Checksum algorithm must be one of ${CHECKSUM_ALGORITHMS.join(', ')}`);
  }
  const bytes = algorithm === 'sha1' ? 20 : 32;
  if (extra !== undefined || !digest || !BASE64.test(digest) || digest.length % 4 !== 0 || Buffer.from(digest, 'base64').length !== bytes) {
    throw badRequest(`Upload-Checksum must be "${algorithm} <base64 of the ${bytes}-byte digest>"`);
  }
  return { algorithm: algorithm as ChecksumAlgorithm, hex: Buffer.from(digest, 'base64').toString('hex') };
}
