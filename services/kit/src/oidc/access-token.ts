// Access tokens of the provider: RFC 9068 JWTs verified against its published keys, or opaque tokens through
// introspection. Both end as a claims set checked the same way (issuer, audience, time), ready for the binding
// check and the claim mapping.
import { createHash } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ProviderUnavailableError, TokenError, type Scheme } from './errors.ts';
import type { IntrospectionResponse } from './introspection.ts';

export interface TokenExpectations {
  issuer: string;
  audiences: string[];
  algorithms: readonly string[];
  skewSeconds: number;
  /** Seconds since the epoch. */
  now: number;
  /** The scheme the token came with: where its refusal is reported. */
  scheme: Scheme;
}

/** RFC 9068 §2.2: what every JWT access token carries. */
const REQUIRED_CLAIMS = ['iss', 'exp', 'aud', 'sub', 'iat', 'jti', 'client_id'];

/**
 * A client sends the same token with many requests. Verified tokens are kept (by hash) this long, bounded by
 * their exp, so a repeat costs a lookup instead of a signature check. It adds no exposure: a key the provider
 * withdraws is trusted for longer than this anyway, until the cached JWKS is refetched.
 */
export const VERIFIED_TOKEN_CACHE_SECONDS = 60;
const MAX_CACHED_TOKENS = 10_000;

export type JwtAccessTokenVerifier = (token: string, keys: JWTVerifyGetKey, expect: TokenExpectations) => Promise<JWTPayload>;

export function createJwtAccessTokenVerifier(): JwtAccessTokenVerifier {
  // Insertion order is age order: the oldest entry is the first key, dropped when the cache is full.
  const verified = new Map<string, { until: number; payload: JWTPayload }>();
  return async (token, keys, expect) => {
    const id = createHash('sha256').update(token).digest('base64url');
    const hit = verified.get(id);
    if (hit && hit.until > expect.now) {
      // Everything but time was settled by the first check; time moves on.
      const exp = hit.payload.exp!;
      if (exp <= expect.now - expect.skewSeconds) throw new TokenError(expect.scheme, 'invalid_token', 'the access token has expired');
      return hit.payload;
    }
    verified.delete(id);
    const payload = await verifyJwtAccessToken(token, keys, expect);
    verified.set(id, { until: Math.min(expect.now + VERIFIED_TOKEN_CACHE_SECONDS, payload.exp!), payload });
    if (verified.size > MAX_CACHED_TOKENS) verified.delete(verified.keys().next().value!);
    return payload;
  };
}

export async function verifyJwtAccessToken(token: string, keys: JWTVerifyGetKey, expect: TokenExpectations): Promise<JWTPayload> {
  const refuse = (description: string) => new TokenError(expect.scheme, 'invalid_token', description);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keys, {
      // `at+jwt` also matches `application/at+jwt` (jose compares media types); an ID token or any other JWT of
      // the provider is refused here.
      typ: 'at+jwt',
      issuer: expect.issuer,
      audience: expect.audiences,
      // Only asymmetric algorithms are configurable: an HS256 token keyed with the provider's public key is refused
      // before any key is looked up.
      algorithms: [...expect.algorithms],
      clockTolerance: expect.skewSeconds,
      requiredClaims: REQUIRED_CLAIMS,
      currentDate: new Date(expect.now * 1000),
    }));
  } catch (error) {
    if (error instanceof ProviderUnavailableError) throw error;
    throw refuse(describeJoseFailure(error));
  }
  if (typeof payload.iat === 'number' && payload.iat > expect.now + expect.skewSeconds) throw refuse('the access token is issued in the future (iat)');
  for (const claim of ['sub', 'jti', 'client_id'] as const)
    if (typeof payload[claim] !== 'string') throw refuse(`the access token's ${claim} claim is invalid`);
  checkConfirmation(payload, refuse);
  return payload;
}

/** RFC 7662: the same checks on an introspection answer; `iss` and `exp` may be absent there, `aud` may not. */
export function checkIntrospection(response: IntrospectionResponse, expect: TokenExpectations): JWTPayload {
  const refuse = (description: string) => new TokenError(expect.scheme, 'invalid_token', description);
  if (response.active !== true) throw refuse('the access token is not active');
  if (response.iss !== undefined && response.iss !== expect.issuer) throw refuse('the access token is issued by another issuer');
  const aud = typeof response.aud === 'string' ? [response.aud] : Array.isArray(response.aud) ? response.aud : [];
  if (!aud.some((a) => expect.audiences.includes(a))) throw refuse('the access token is not for this service (aud)');
  if (typeof response.exp === 'number' && response.exp <= expect.now - expect.skewSeconds) throw refuse('the access token has expired');
  if (typeof response.nbf === 'number' && response.nbf > expect.now + expect.skewSeconds) throw refuse('the access token is not valid yet (nbf)');
  const { active: _active, ...claims } = response;
  checkConfirmation(claims, refuse);
  return claims as JWTPayload;
}

/** A confirmation we cannot check (mTLS `x5t#S256`, anything but one jkt) must not be ignored: it is refused. */
function checkConfirmation(claims: Record<string, unknown>, refuse: (description: string) => TokenError): void {
  const cnf = claims.cnf;
  if (cnf === undefined) return;
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf)) throw refuse("the access token's cnf claim is invalid");
  const members = Object.keys(cnf);
  if (members.length === 0) return;
  if (members.length !== 1 || members[0] !== 'jkt' || typeof (cnf as { jkt: unknown }).jkt !== 'string')
    throw refuse("the access token's confirmation method is not supported");
}

/** The DPoP key the token is bound to, if any. */
export const boundKey = (claims: JWTPayload): string | undefined => (claims.cnf as { jkt?: string } | undefined)?.jkt;

function describeJoseFailure(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'the access token has expired';
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return "the access token's signing algorithm is not accepted";
  if (error instanceof joseErrors.JWKSNoMatchingKey) return 'the access token is signed with a key the provider does not publish';
  if (error instanceof joseErrors.JWKSMultipleMatchingKeys) return 'the access token names no kid and several provider keys match';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return "the access token's signature does not verify";
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'typ') return 'the token is not an access token (typ must be at+jwt)';
    if (error.claim === 'iss') return 'the access token is issued by another issuer';
    if (error.claim === 'aud') return 'the access token is not for this service (aud)';
    if (error.claim === 'nbf') return 'the access token is not valid yet (nbf)';
    if (error.reason === 'missing') return `the access token lacks the ${error.claim} claim`;
    return `the access token's ${error.claim} claim is invalid`;
  }
  if (error instanceof joseErrors.JOSENotSupported) return "the access token's algorithm or key type is not supported";
  return 'the access token is malformed';
}
