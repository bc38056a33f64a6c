// The sign-in in flight (state, nonce, PKCE verifier, where to return), kept by the browser in a short-lived
// cookie between the redirect to the provider and its redirect back: encrypted and authenticated (JWE, A256GCM,
// key derived from the session secret), so no server state is needed and any replica can finish the sign-in.
// SameSite=Lax, not Strict: the provider's redirect back is a cross-site top-level GET, which Lax lets through.
import { hkdfSync } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';

export interface SignInTransaction {
  state: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
}

export const TRANSACTION_TTL_SECONDS = 600;
/** Sent only to the callback. */
export const TRANSACTION_COOKIE_PATH = '/auth/oidc/';

export const transactionCookieOptions = (maxAge: number) => ({ httpOnly: true, secure: true, sameSite: 'lax', path: TRANSACTION_COOKIE_PATH, maxAge }) as const;

export function createTransactionSealer(secret: string, purpose: string) {
  // A key of its own: the session secret signs sessions (HS256); reusing the raw bytes for encryption too would
  // tie two algorithms to one key.
  const key = new Uint8Array(hkdfSync('sha256', secret, 'boxyard-oidc-sign-in', `transaction-cookie:${purpose}`, 32));
  return {
    seal: (transaction: SignInTransaction): Promise<string> =>
      new EncryptJWT({ ...transaction })
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
        .setIssuedAt()
        .setExpirationTime(`${TRANSACTION_TTL_SECONDS}s`)
        .encrypt(key),

    /** The transaction, or undefined when the cookie is missing, expired, tampered with or from another key. */
    async open(value: string | undefined): Promise<SignInTransaction | undefined> {
      if (!value) return undefined;
      try {
        const { payload } = await jwtDecrypt(value, key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
        const { state, nonce, codeVerifier, returnTo } = payload;
        if (typeof state !== 'string' || typeof nonce !== 'string' || typeof codeVerifier !== 'string' || typeof returnTo !== 'string') return undefined;
        return { state, nonce, codeVerifier, returnTo };
      } catch {
        return undefined;
      }
    },
  };
}
