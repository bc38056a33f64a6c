// A DPoP proof (RFC 9449 §4.3) checked without I/O: what remains for the caller is the binding to the token
// (cnf.jkt against the returned thumbprint), the server nonce, and the replay check of the jti.
import { createHash } from 'node:crypto';
import { decodeProtectedHeader, errors as joseErrors, importJWK, jwtVerify, type CryptoKey, type JWK } from 'jose';
import { TokenError } from './errors.ts';
import { normalizeHtu } from './htu.ts';

export interface ProofExpectations {
  method: string;
  /** Normalised target URI (expectedHtu). */
  htu: string;
  accessToken: string;
  algorithms: readonly string[];
  maxAgeSeconds: number;
  skewSeconds: number;
  /** Seconds since the epoch. */
  now: number;
}

export interface VerifiedProof {
  jti: string;
  iat: number;
  /** JWK SHA-256 thumbprint (RFC 7638) of the proof's key: what `cnf.jkt` of the token must be. */
  jkt: string;
  nonce?: string;
}

/** Far above any real proof (a P-521 or RSA-4096 key included); bounds the work an attacker can ask for. */
const MAX_PROOF_LENGTH = 8192;
/** jtis are stored (hashed); a bound keeps a client from sending megabytes of identifier. */
const MAX_JTI_LENGTH = 512;
/** JWK members that hold private or symmetric key material. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'];

const refuse = (description: string) => new TokenError('DPoP', 'invalid_dpop_proof', description);

/** RFC 7638 members per key type, in the lexicographic order the thumbprint input takes them. */
const THUMBPRINT_MEMBERS: Record<string, readonly string[]> = { EC: ['crv', 'kty', 'x', 'y'], OKP: ['crv', 'kty', 'x'], RSA: ['e', 'kty', 'n'] };

/**
 * The JWK SHA-256 thumbprint (RFC 7638), synchronously: jose's goes through WebCrypto's async digest, which costs
 * more than the hash on every request. Undefined for a key type DPoP cannot use or a member that is not a string.
 */
export function jwkThumbprint(jwk: JWK): string | undefined {
  const members = typeof jwk.kty === 'string' ? THUMBPRINT_MEMBERS[jwk.kty] : undefined;
  if (!members) return undefined;
  const required: Record<string, string> = {};
  for (const member of members) {
    const value = (jwk as Record<string, unknown>)[member];
    if (typeof value !== 'string') return undefined;
    required[member] = value;
  }
  return createHash('sha256').update(JSON.stringify(required)).digest('base64url');
}

/**
 * Imported proof keys by alg and thumbprint: a client signs every proof with the same key, and importing it
 * costs about half an ECDSA verification. The thumbprint covers all of the key's material, so a hit is the same
 * public key; the members that do not make the key (use, alg, key_ops) are checked on every proof.
 */
const importedKeys = new Map<string, Promise<CryptoKey | Uint8Array>>();
const MAX_IMPORTED_KEYS = 1000;

function proofKey(jwk: JWK, alg: string, jkt: string): Promise<CryptoKey | Uint8Array> {
  const id = `${alg}.${jkt}`;
  let key = importedKeys.get(id);
  if (!key) {
    key = importJWK(jwk, alg);
    importedKeys.set(id, key);
    key.catch(() => importedKeys.delete(id));
    if (importedKeys.size > MAX_IMPORTED_KEYS) importedKeys.delete(importedKeys.keys().next().value!);
  }
  return key;
}

export const accessTokenHash = (token: string) => createHash('sha256').update(token).digest('base64url');

export async function verifyDpopProof(proof: string, expect: ProofExpectations): Promise<VerifiedProof> {
  if (proof.length > MAX_PROOF_LENGTH) throw refuse('the DPoP proof is too large');
  let jwk: JWK;
  let alg: unknown;
  try {
    const header = decodeProtectedHeader(proof);
    if (!header.jwk || typeof header.jwk !== 'object' || Array.isArray(header.jwk)) throw refuse("the DPoP proof's header has no jwk");
    ({ jwk, alg } = header);
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw refuse('the DPoP proof is not a JWT');
  }
  // Before the key is imported: the algorithm is one we accept (never HMAC: the "key" would be in the proof).
  if (typeof alg !== 'string' || !expect.algorithms.includes(alg)) throw refuse("the DPoP proof's algorithm is not accepted");
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw refuse("the DPoP proof's jwk must be a public key");
  if (
    (jwk.use !== undefined && jwk.use !== 'sig') ||
    (jwk.alg !== undefined && jwk.alg !== alg) ||
    (jwk.key_ops !== undefined && !jwk.key_ops.includes('verify'))
  ) {
    throw refuse("the DPoP proof's jwk is not meant for this signature (use, alg or key_ops)");
  }
  const jkt = jwkThumbprint(jwk);
  if (!jkt) throw refuse("the DPoP proof's jwk is not a supported public key");

  let claims: Record<string, unknown>;
  try {
    const key = await proofKey(jwk, alg, jkt);
    if (key instanceof Uint8Array || key.type !== 'public') throw refuse("the DPoP proof's jwk must be a public key");
    ({ payload: claims } = await jwtVerify(proof, key, {
      typ: 'dpop+jwt',
      algorithms: [...expect.algorithms],
      requiredClaims: ['jti', 'htm', 'htu', 'iat', 'ath'],
      clockTolerance: expect.skewSeconds,
      currentDate: new Date(expect.now * 1000),
    }));
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw refuse(describeJoseFailure(error));
  }

  const { jti, htm, htu, iat, ath, nonce } = claims;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH) throw refuse("the DPoP proof's jti is invalid");
  if (typeof iat !== 'number') throw refuse("the DPoP proof's iat is invalid");
  if (iat > expect.now + expect.skewSeconds) throw refuse('the DPoP proof is issued in the future');
  if (iat < expect.now - expect.maxAgeSeconds - expect.skewSeconds) throw refuse('the DPoP proof is too old (iat)');
  if (htm !== expect.method) throw refuse("the DPoP proof's htm does not match the request method");
  if (typeof htu !== 'string' || normalizeHtu(htu) !== expect.htu) throw refuse("the DPoP proof's htu does not match the request URL");
  if (ath !== accessTokenHash(expect.accessToken)) throw refuse("the DPoP proof's ath does not match the access token");
  if (nonce !== undefined && typeof nonce !== 'string') throw refuse("the DPoP proof's nonce is invalid");

  return { jti, iat, jkt, ...(nonce === undefined ? {} : { nonce }) };
}

function describeJoseFailure(error: unknown): string {
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return "the DPoP proof's algorithm is not accepted";
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return "the DPoP proof's signature does not verify under its jwk";
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'typ') return "the DPoP proof's typ must be dpop+jwt";
    if (error.reason === 'missing') return `the DPoP proof lacks the ${error.claim} claim`;
    return `the DPoP proof's ${error.claim} claim is invalid`;
  }
  if (error instanceof joseErrors.JWTExpired) return 'the DPoP proof has expired';
  if (error instanceof joseErrors.JOSENotSupported || error instanceof TypeError) return "the DPoP proof's key does not fit its algorithm";
  return 'the DPoP proof is malformed';
}
