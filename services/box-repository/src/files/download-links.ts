// Short-lived download links: the file's stable URL plus `expires` (epoch seconds) and `signature`, an
// HMAC-SHA256 over the file id and the expiry. Valid for that one file only, without other credentials, until it
// expires. The key is derived from the session secret (and the previous ones, so links survive a rotation).
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface DownloadLinks {
  sign(fileId: number, ttlSeconds: number): { expires: number; signature: string };
  /** 'valid', 'expired' or 'invalid'. */
  check(fileId: number, expires: string | undefined, signature: string | undefined): 'valid' | 'expired' | 'invalid';
}

const derive = (secret: string) => createHmac('sha256', secret).update('boxyard box-repository download links v1').digest();

export function createDownloadLinks(secrets: string[]): DownloadLinks {
  const keys = secrets.map(derive);
  const mac = (key: Buffer, fileId: number, expires: number) => createHmac('sha256', key).update(`${fileId}:${expires}`).digest();
  return {
    sign(fileId, ttlSeconds) {
      const expires = Math.floor(Date.now() / 1000) + ttlSeconds;
      return { expires, signature: mac(keys[0]!, fileId, expires).toString('base64url') };
    },
    check(fileId, expiresText, signatureText) {
      if (!expiresText || !signatureText || !/^\d{1,12}$/.test(expiresText)) return 'invalid';
      const expires = Number(expiresText);
      const given = Buffer.from(signatureText, 'base64url');
      const matches = keys.some((key) => {
        const expected = mac(key, fileId, expires);
        return given.length === expected.length && timingSafeEqual(given, expected);
      });
      if (!matches) return 'invalid';
      return expires * 1000 < Date.now() ? 'expired' : 'valid';
    },
  };
}
