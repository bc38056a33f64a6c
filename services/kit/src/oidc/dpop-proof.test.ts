// Pure parts of the DPoP checks: the synchronous RFC 7638 thumbprint agrees with jose's, and stateless nonces.
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { createNonceIssuer } from './dpop-nonce.ts';
import { jwkThumbprint } from './dpop-proof.ts';

describe('jwkThumbprint', () => {
  it('matches RFC 7638 §3.1 and jose for EC, OKP and RSA keys', async () => {
    const rfc = {
      kty: 'RSA',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
    };
    expect(jwkThumbprint(rfc)).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
    for (const alg of ['ES256', 'ES384', 'EdDSA', 'RS256'] as const) {
      const jwk = await exportJWK((await generateKeyPair(alg)).publicKey);
      expect(jwkThumbprint({ ...jwk, use: 'sig' })).toBe(await calculateJwkThumbprint(jwk));
    }
    expect(jwkThumbprint({ kty: 'oct', k: 'c2VjcmV0' })).toBeUndefined();
    expect(jwkThumbprint({ kty: 'EC', crv: 'P-256', x: 'a' })).toBeUndefined();
  });
});

describe('stateless DPoP nonces', () => {
  const secret = 'a-secret-shared-by-replicas-0123456789abcdef';
  it('accepts the current slot, the previous one (stale) and the next one (another replica ahead), nothing else', () => {
    const issuer = createNonceIssuer(secret, 100);
    const now = 1_000_050;
    expect(issuer.check(issuer.current(now), now)).toBe('current');
    expect(issuer.check(issuer.current(now - 100), now)).toBe('stale');
    expect(issuer.check(issuer.current(now + 100), now)).toBe('current');
    expect(issuer.check(issuer.current(now - 200), now)).toBe('invalid');
    expect(issuer.check(issuer.current(now + 200), now)).toBe('invalid');
    // Another replica with the same secret agrees; another secret does not.
    expect(createNonceIssuer(secret, 100).check(issuer.current(now), now)).toBe('current');
    expect(createNonceIssuer(`${secret}x`, 100).check(issuer.current(now), now)).toBe('invalid');
    expect(issuer.check('', now)).toBe('invalid');
    expect(issuer.check(`${issuer.current(now).slice(0, -1)}A`, now)).not.toBe('current');
  });
});
