// Server-issued DPoP nonces (RFC 9449 §8, §9) without shared state: a nonce is the number of a time slot and an
// HMAC of it, under a key every replica derives from the same secret, so any replica accepts any replica's nonce.
// It limits how long a proof made in advance stays usable; single use is the jti replay cache's job.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** A nonce is current for one slot and accepted one slot longer, so a client always has a full slot to use it. */
export const NONCE_SLOT_SECONDS = 120;

export type NonceCheck = 'current' | 'stale' | 'invalid';

export interface NonceIssuer {
  /** The nonce to hand out now. */
  current(now: number): string;
  /** `stale`: accepted, but the client should be given `current()`. */
  check(nonce: string, now: number): NonceCheck;
}

export function createNonceIssuer(secret: string, slotSeconds = NONCE_SLOT_SECONDS): NonceIssuer {
  // A key of its own: the secret (e.g. the session secret) is never used directly for a second purpose.
  const key = Buffer.from(hkdfSync('sha256', secret, 'boxyard', 'dpop-nonce v1', 32));
  const mac = (slot: number) => createHmac('sha256', key).update(String(slot)).digest().subarray(0, 16);
  const slotOf = (now: number) => Math.floor(now / slotSeconds);
  return {
    current: (now) => {
      const slot = slotOf(now);
      return `${slot.toString(36)}.${mac(slot).toString('base64url')}`;
    },
    check(nonce, now) {
      const match = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})$/.exec(nonce);
      if (!match) return 'invalid';
      const slot = parseInt(match[1]!, 36);
      const current = slotOf(now);
      // One slot ahead is accepted too: another replica's clock may have crossed a boundary first.
      if (slot < current - 1 || slot > current + 1) return 'invalid';
      if (!timingSafeEqual(Buffer.from(match[2]!, 'base64url'), mac(slot))) return 'invalid';
      return slot < current ? 'stale' : 'current';
    },
  };
}
