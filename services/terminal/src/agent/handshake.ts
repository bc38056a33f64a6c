// How the gateway and an agent know each other, without ever sending a secret. An agent address (a pod IP) can
// change hands when a session pod dies: whatever listens there next must get nothing that lets it attach, and the
// gateway must not take it for the agent. So, for every call:
//   1. gateway → agent  POST /challenge  with a fresh gateway nonce (x-boxyard-challenge), signed with the session's
//      gateway key with the time it was made (x-boxyard-challenge-signature): the agent keeps those apart, once per
//      nonce and only while fresh, so nobody else can fill that table of outstanding challenges and push out the one
//      the gateway is about to use (unsigned challenges, from gateways before this, get a table of their own)
//      agent → gateway  {nonce: agent nonce, proof: HMAC-SHA256(agent key, gateway nonce, agent nonce)}
//      The gateway checks the proof: only the session's agent holds the agent key. An impostor fails here, and has
//      seen a random nonce only.
//   2. gateway → agent  the call itself, `Authorization: Boxyard-Proof nonce=<agent nonce>, signature=<Ed25519>`
//      over both nonces, the method and the path, with the session's gateway key. The agent checks it with the
//      gateway's public key and takes each nonce once: a signature seen on the wire cannot be used again, nor for
//      another call.
// Both keys derive from the session's secret (sealed in the session record, so any gateway replica can attach).
// The agent is told its agent key and the gateway's public key: neither lets anyone attach.
import { createHmac, createPrivateKey, createPublicKey, hkdfSync, randomBytes, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';

export const CHALLENGE_PATH = '/challenge';
export const CHALLENGE_HEADER = 'x-boxyard-challenge';
export const CHALLENGE_SIGNATURE_HEADER = 'x-boxyard-challenge-signature';
/** How far a challenge's time may be from the agent's clock (either way: gateway and agent may run on two nodes). */
export const CHALLENGE_FRESH_MS = 120_000;
/** `<milliseconds since the epoch>.<Ed25519 signature>`. */
const CHALLENGE_SIGNATURE = /^(\d{13})\.([A-Za-z0-9_-]{86})$/;
const SCHEME = 'Boxyard-Proof';
/** 32 random bytes, base64url. */
const NONCE = /^[A-Za-z0-9_-]{43}$/;
/** An Ed25519 signature, base64url. */
const SIGNATURE = /^[A-Za-z0-9_-]{86}$/;
const AUTHORIZATION = /^Boxyard-Proof nonce=([A-Za-z0-9_-]{43}), signature=([A-Za-z0-9_-]{86})$/;
// PKCS #8 wrapping of a raw Ed25519 seed (RFC 8410): the key is derived, not generated, so every replica has it.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export const isNonce = (value: unknown): value is string => typeof value === 'string' && NONCE.test(value);
export const newNonce = () => randomBytes(32).toString('base64url');

const derive = (secret: string, purpose: string) => Buffer.from(hkdfSync('sha256', secret, 'boxyard-terminal-agent', purpose, 32));

export interface GatewayKeys {
  /** Given to the agent: proves the agent is the session's. */
  agentKey: string;
  /** Given to the agent: checks the gateway's signatures. */
  gatewayPublicKey: string;
  /** The gateway's alone. */
  gatewayPrivateKey: KeyObject;
}

export function sessionKeys(secret: string): GatewayKeys {
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, derive(secret, 'gateway-ed25519-v1')]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return {
    agentKey: derive(secret, 'agent-hmac-v1').toString('base64url'),
    gatewayPublicKey: spki.subarray(ED25519_SPKI_PREFIX.length).toString('base64url'),
    gatewayPrivateKey: privateKey,
  };
}

export function publicKeyFrom(raw: string): KeyObject {
  const bytes = Buffer.from(raw, 'base64url');
  if (bytes.length !== 32) throw new Error('an Ed25519 public key is 32 bytes');
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, bytes]), format: 'der', type: 'spki' });
}

/** The agent's answer to a challenge. */
export function agentProof(agentKey: string, sessionId: string, gatewayNonce: string, agentNonce: string): string {
  return createHmac('sha256', Buffer.from(agentKey, 'base64url'))
    .update(`boxyard-agent-proof\n${sessionId}\n${gatewayNonce}\n${agentNonce}`)
    .digest('base64url');
}

export function proofMatches(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

const signed = (sessionId: string, agentNonce: string, gatewayNonce: string, method: string, path: string) =>
  Buffer.from(`boxyard-gateway-proof\n${sessionId}\n${agentNonce}\n${gatewayNonce}\n${method.toUpperCase()} ${path}`);

const challengeSigned = (sessionId: string, gatewayNonce: string, madeAt: number) =>
  Buffer.from(`boxyard-gateway-challenge\n${sessionId}\n${gatewayNonce}\n${madeAt}`);

/** A challenge the gateway signed: its nonce, and its signature (CHALLENGE_SIGNATURE_HEADER's value). */
export interface SignedChallenge {
  nonce: string;
  signature: string;
}

/** The agent's answer to a challenge: its own nonce, and the proof that it holds the session's agent key. */
export interface ChallengeAnswer {
  nonce: string;
  proof: string;
}

/** The gateway's signature of a challenge it sends now (CHALLENGE_SIGNATURE_HEADER). */
export function challengeSignature(keys: GatewayKeys, sessionId: string, gatewayNonce: string, now = Date.now()): string {
  return `${now}.${sign(null, challengeSigned(sessionId, gatewayNonce, now), keys.gatewayPrivateKey).toString('base64url')}`;
}

/** When the gateway signed this challenge, or undefined when the header is not its signature of it. */
export function challengeSignedAt(publicKey: KeyObject, sessionId: string, gatewayNonce: string, header: unknown): number | undefined {
  // Length-checked before the (anchored, linear) match.
  if (typeof header !== 'string' || header.length > 120) return undefined;
  const match = CHALLENGE_SIGNATURE.exec(header);
  if (!match) return undefined;
  const madeAt = Number(match[1]);
  return verify(null, challengeSigned(sessionId, gatewayNonce, madeAt), publicKey, Buffer.from(match[2]!, 'base64url')) ? madeAt : undefined;
}

export function gatewayAuthorization(keys: GatewayKeys, sessionId: string, agentNonce: string, gatewayNonce: string, method: string, path: string): string {
  const signature = sign(null, signed(sessionId, agentNonce, gatewayNonce, method, path), keys.gatewayPrivateKey).toString('base64url');
  return `${SCHEME} nonce=${agentNonce}, signature=${signature}`;
}

/** The agent nonce an Authorization header names, or undefined when it is not one of ours. */
export function parseAuthorization(header: string | undefined): { nonce: string; signature: string } | undefined {
  // Length-checked before the (anchored, linear) match: nothing long is ever scanned.
  if (!header || header.length > 200) return undefined;
  const match = AUTHORIZATION.exec(header);
  return match && SIGNATURE.test(match[2]!) ? { nonce: match[1]!, signature: match[2]! } : undefined;
}

export function signatureValid(
  publicKey: KeyObject,
  sessionId: string,
  agentNonce: string,
  gatewayNonce: string,
  method: string,
  path: string,
  signature: string,
): boolean {
  return verify(null, signed(sessionId, agentNonce, gatewayNonce, method, path), publicKey, Buffer.from(signature, 'base64url'));
}

/**
 * The agent's outstanding challenges: each answered challenge's nonces, usable once, for `ttlMs`. Bounded: past
 * `max`, the oldest go. Only the gateway's signed challenges get here (`admit`), each gateway nonce once while its
 * time is fresh, so a replayed challenge seen on the wire cannot push the gateway's own out either.
 */
export function createChallenges(options: { max: number; ttlMs: number; now?: () => number }) {
  const now = options.now ?? Date.now;
  const pending = new Map<string, { gatewayNonce: string; expiresAt: number }>();
  // Gateway nonces admitted while their time is fresh (a replay within that time is refused by this, after it by
  // the time); in admission order, so the stale ones are at the front. Grows only with the gateway's own calls.
  const admitted = new Map<string, number>();
  return {
    /** Whether a challenge the gateway signed at `madeAt` may be answered: fresh, and its nonce not seen before. */
    admit(gatewayNonce: string, madeAt: number): boolean {
      const at = now();
      for (const [nonce, time] of admitted) {
        if (Math.abs(at - time) <= CHALLENGE_FRESH_MS && admitted.size < options.max * 16) break;
        admitted.delete(nonce);
      }
      if (Math.abs(at - madeAt) > CHALLENGE_FRESH_MS || admitted.has(gatewayNonce)) return false;
      admitted.set(gatewayNonce, madeAt);
      return true;
    },
    issue(gatewayNonce: string): string {
      const agentNonce = newNonce();
      while (pending.size >= options.max) pending.delete(pending.keys().next().value!);
      pending.set(agentNonce, { gatewayNonce, expiresAt: now() + options.ttlMs });
      return agentNonce;
    },
    /** The gateway nonce the agent nonce was issued for, once; undefined if unknown, used or expired. */
    take(agentNonce: string): string | undefined {
      const entry = pending.get(agentNonce);
      if (!entry) return undefined;
      pending.delete(agentNonce);
      return entry.expiresAt >= now() ? entry.gatewayNonce : undefined;
    },
    get size() {
      return pending.size;
    },
  };
}
