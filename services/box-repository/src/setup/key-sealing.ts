// The uploaded private key is kept in PostgreSQL sealed (AES-256-GCM) with a key derived from session.secret, so
// a database dump or backup alone does not give away the TLS key. Older session secrets still open it while
// they are listed in session.previous_secrets (rotation).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const PREFIX = 'sealed:v1:';
const INFO = 'boxyard box-repository tls key';

const keyFrom = (secret: string) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), INFO, 32));

export function sealKey(pem: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFrom(secret), iv);
  const sealed = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()]);
  return `${PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
}

/** The PEM, or undefined when none of the secrets opens it (the secret was rotated out). */
export function openKey(stored: string, secrets: readonly string[]): string | undefined {
  if (!stored.startsWith(PREFIX)) return undefined;
  const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
  const [iv, tag, sealed] = [raw.subarray(0, 12), raw.subarray(12, 28), raw.subarray(28)];
  for (const secret of secrets) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyFrom(secret), iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(sealed), decipher.final()]).toString('utf8');
    } catch {
      // not this secret
    }
  }
  return undefined;
}
