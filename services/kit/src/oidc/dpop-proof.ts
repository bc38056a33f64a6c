// A DPoP proof (RFC 9449 §4.3) checked without I/O: what remains for the caller is the binding to the token
// (cnf.jkt against the returned thumbprint), the server nonce, and the replay check of the jti.
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, errors as joseErrors, jwtVerify, type JWK } from 'jose';
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

export const accessTokenHash = (token: string) => createHash('sha256').update(token).digest('base64url');

export async function verifyDpopProof(proof: string, expect: ProofExpectations): Promise<VerifiedProof> {
  if (proof.length > MAX_PROOF_LENGTH) throw refuse('the DPoP proof is too large');
  let jwk: JWK;
  try {
    const header = decodeProtectedHeader(proof);
    if (!header.jwk || typeof header.jwk !== 'object') throw refuse("the DPoP proof's header has no jwk");
    jwk = header.jwk;
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw refuse('the DPoP proof is not a JWT');
  }
  // jose refuses a private key too, but only as a generic invalid JWS; this says what is wrong.
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw refuse("the DPoP proof's jwk must be a public key");

  let claims: Record<string, unknown>;
  try {
    ({ payload: claims } = await jwtVerify(proof, EmbeddedJWK, {
      typ: 'dpop+jwt',
      algorithms: [...expect.algorithms],
      requiredClaims: ['jti', 'htm', 'htu', 'iat', 'ath'],
      clockTolerance: expect.skewSeconds,
      currentDate: new Date(expect.now * 1000),
    }));
  } catch (error) {
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

  return { jti, iat, jkt: await calculateJwkThumbprint(jwk, 'sha256'), ...(nonce === undefined ? {} : { nonce }) };
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
  if (error instanceof joseErrors.JOSENotSupported) return "the DPoP proof's key or algorithm is not supported";
  return 'the DPoP proof is malformed';
}
