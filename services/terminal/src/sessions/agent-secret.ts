// Each session has its own agent secret: the gateway's and the agent's keys derive from it (agent/handshake.ts), and
// it never leaves the gateway. Any gateway replica must be able to attach, so the secret is kept in the session record, sealed
// with AES-256-GCM under a key derived from the service's session secret (current first, then previous ones,
// so rotating `session.secret` keeps live sessions reachable while the old secret is listed).
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

export function newAgentSecret(): string {
  return randomBytes(32).toString('base64url');
}

export interface SecretBox {
  seal(plain: string, context: string): string;
  open(sealed: string, context: string): string;
}

export function createSecretBox(secrets: string[]): SecretBox {
  if (secrets.length === 0) throw new Error('secret box: at least one secret is required');
  const keys = secrets.map((secret) => {
    const key = Buffer.from(hkdfSync('sha256', secret, 'boxyard-terminal', 'agent-secret-v1', 32));
    return { id: createHash('sha256').update(key).digest('base64url').slice(0, 8), key };
  });
  const current = keys[0]!;
  return {
    // `context` (the session id) is bound as associated data: a sealed secret copied to another row won't open.
    seal(plain, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [VERSION, current.id, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
    },
    open(sealed, context) {
      const [version, id, iv, tag, body] = sealed.split('.');
      const key = keys.find((k) => k.id === id);
      if (version !== VERSION || !key || !iv || !tag || body === undefined)
        throw new Error('agent secret sealed with an unknown key (was session.secret rotated without keeping the old one in previous_secrets?)');
      const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
