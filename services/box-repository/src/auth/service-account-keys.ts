// Service-account keys: `bxy_sa_<key id>_<secret>`. The key id (64 random bits, hex) finds the row in one
// indexed query; the secret (256 random bits) is only ever stored as the sha256 of the whole key, compared in
// constant time. The recognisable prefix lets secret scanners spot leaked keys.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const KEY_PREFIX = 'bxy_sa_';
const KEY_ID_LENGTH = 16;
const keyPattern = /^bxy_sa_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface GeneratedKey {
  key: string;
  keyId: string;
  sha256: string;
}

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

export function generateServiceAccountKey(): GeneratedKey {
  const keyId = randomBytes(KEY_ID_LENGTH / 2).toString('hex');
  const key = `${KEY_PREFIX}${keyId}_${randomBytes(32).toString('base64url')}`;
  return { key, keyId, sha256: sha256Hex(key) };
}

export const looksLikeServiceAccountKey = (value: string): boolean => value.startsWith(KEY_PREFIX);

/** The key id of a well-formed key, or undefined. */
export function keyIdOf(key: string): string | undefined {
  return keyPattern.exec(key)?.[1];
}

export function keyMatches(key: string, storedSha256: string): boolean {
  const actual = Buffer.from(sha256Hex(key), 'hex');
  const expected = Buffer.from(storedSha256, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
