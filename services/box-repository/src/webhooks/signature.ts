// The headers that let a receiver check a delivery came from us, in two schemes over the exact body bytes:
//   - the seed's `x-boxyard-signature: sha256=<hex HMAC-SHA256 of the body, keyed with the secret>`;
//   - Standard Webhooks (standardwebhooks.com): `webhook-id`, `webhook-timestamp` and
//     `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, which its libraries verify
//     (and which adds replay protection: the id is the same on every retry, the timestamp is the attempt's).
// The Standard Webhooks key is the secret's bytes after `whsec_` base64-decoded when the secret has that form
// (as the standard's own secrets do), else the secret's UTF-8 bytes (the libraries' "raw" format).
import { createHmac, randomBytes } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-boxyard-signature';

export function boxyardSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function standardWebhooksKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

export function standardWebhooksSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', standardWebhooksKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export function signedHeaders(secret: string, id: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    [SIGNATURE_HEADER]: boxyardSignature(secret, body),
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhooksSignature(secret, id, timestamp, body),
  };
}

/** A secret for a webhook created without one, in the Standard Webhooks form (24 random bytes). */
export const generateSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
