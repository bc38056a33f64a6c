// Session JWTs on jose: HS256 pinned, issuer/audience checked, a dedicated `typ` so that no other token
// (an IdP access token, a refresh token) ever passes as a session, and `kid` so secrets can rotate.
import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors, type JWTPayload } from 'jose';

export const MIN_SECRET_BYTES = 32;

export interface SessionTokenOptions {
  /** The current signing secret, then older ones still accepted for verification. */
  secrets: string[];
  issuer: string;
  audience: string;
  /** Media type of the token, e.g. `boxyard-session+jwt`. */
  typ: string;
  ttlSeconds: number;
}

export interface IssuedToken {
  token: string;
  jti: string;
  expiresAt: Date;
}

export interface SessionClaims extends JWTPayload {
  sub: string;
  jti: string;
  exp: number;
}

export class InvalidTokenError extends Error {
  override name = 'InvalidTokenError';
  readonly expired: boolean;
  constructor(message: string, expired = false) {
    super(message);
    this.expired = expired;
  }
}

const keyId = (secret: Uint8Array) => createHash('sha256').update(secret).digest('base64url').slice(0, 12);

export function createSessionTokens(options: SessionTokenOptions) {
  if (options.secrets.length === 0) throw new Error('session tokens: a signing secret is required');
  const keys = options.secrets.map((secret, index) => {
    const bytes = new TextEncoder().encode(secret);
    // jose accepts short HMAC keys; we don't: a short secret can be brute-forced offline from any token.
    if (bytes.length < MIN_SECRET_BYTES)
      throw new Error(`session tokens: secret #${index + 1} is ${bytes.length} bytes; HS256 needs at least ${MIN_SECRET_BYTES}`);
    return { kid: keyId(bytes), bytes };
  });
  const current = keys[0]!;
  const byKid = new Map(keys.map((k) => [k.kid, k.bytes]));

  return {
    async sign(subject: string, claims: Record<string, unknown> = {}, ttlSeconds = options.ttlSeconds): Promise<IssuedToken> {
      const jti = randomUUID();
      const expiresAt = new Date(Date.now() + ttlSeconds * 1000);
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: options.typ, kid: current.kid })
        .setSubject(subject)
        .setIssuer(options.issuer)
        .setAudience(options.audience)
        .setJti(jti)
        .setIssuedAt()
        .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
        .sign(current.bytes);
      return { token, jti, expiresAt };
    },

    async verify(token: string): Promise<SessionClaims> {
      try {
        const { payload } = await jwtVerify(
          token,
          async (header) => {
            const key = header.kid ? byKid.get(header.kid) : undefined;
            if (!key) throw new InvalidTokenError('unknown signing key');
            return key;
          },
          { algorithms: ['HS256'], issuer: options.issuer, audience: options.audience, typ: options.typ, requiredClaims: ['sub', 'jti', 'exp'] },
        );
        return payload as SessionClaims;
      } catch (error) {
        if (error instanceof InvalidTokenError) throw error;
        if (error instanceof joseErrors.JWTExpired) throw new InvalidTokenError('token expired', true);
        throw new InvalidTokenError('invalid token');
      }
    },
  };
}

export type SessionTokens = ReturnType<typeof createSessionTokens>;
