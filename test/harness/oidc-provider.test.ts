// The harness's OpenID provider issues what the resource-server tests rely on: RFC 9068 JWT access tokens for the
// named resource, bound to the DPoP key of the token request (cnf.jkt), with the acting user's claims.
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newDpopKey, startOidcProvider, type RunningOidcProvider } from './oidc-provider.ts';

describe('test OpenID provider', () => {
  let idp: RunningOidcProvider;
  const resource = 'https://boxes.example.test';
  beforeAll(async () => {
    idp = await startOidcProvider({
      resources: [resource],
      clients: [{ client_id: 'alice-cli', client_secret: 'alice-secret-0123456789', actsAs: { login: 'alice', groups: ['devs'] } }],
    });
  });
  afterAll(() => idp?.stop());

  it('issues DPoP-bound JWT access tokens with the acting user', async () => {
    const key = await newDpopKey();
    const token = await idp.token({ resource, dpop: key, client: { client_id: 'alice-cli', client_secret: 'alice-secret-0123456789' } });
    expect(decodeProtectedHeader(token)).toMatchObject({ typ: 'at+jwt', alg: 'ES256', kid: idp.kid() });
    expect(decodeJwt(token)).toMatchObject({ iss: idp.issuer, aud: resource, cnf: { jkt: key.thumbprint }, preferred_username: 'alice', groups: ['devs'] });
  });

  it('issues plain bearer tokens without a proof, and signs with a new kid after rotation', async () => {
    const before = idp.kid();
    expect(decodeJwt(await idp.token({ resource }))).not.toHaveProperty('cnf');
    await idp.rotateKeys();
    expect(idp.kid()).not.toBe(before);
    expect(decodeProtectedHeader(await idp.token({ resource })).kid).toBe(idp.kid());
  });
});
