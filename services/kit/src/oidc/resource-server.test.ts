// The verifier against a real OpenID provider (oidc-provider from the harness) and a real PostgreSQL: a small
// fastify app with one route that calls verify(); two apps on one database stand for two replicas. Every case is
// also put to oauth4webapi's validateJwtAccessToken (an independent implementation): it must accept and refuse
// the same requests, except where a check is server state it does not keep (the jti replay cache, server nonces).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { dpopProof, newDpopKey, startOidcProvider, type DpopKey, type RunningOidcProvider, type TestClient } from '@boxyard/test/harness/oidc-provider.ts';
import { resourceServerSchema, type ResourceServerConfig } from '../config/auth-section.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { createApp } from '../http/create-app.ts';
import { freePort } from '../net/free-port.ts';
import { createNonceIssuer, NONCE_SLOT_SECONDS } from './dpop-nonce.ts';
import { resourceServerMigrations } from './replay-cache.ts';
import { createResourceServer, type ResourceServer } from './resource-server.ts';

const AUD = 'https://boxes.example.test';
const OTHER_AUD = 'https://files.example.test';
const OPAQUE_AUD = 'https://terminal.example.test';
const PUBLIC_URL = 'https://boxes.example.test';
const PATH = '/api/things/1';
const HTU = `${PUBLIC_URL}${PATH}`;
const alice: TestClient = {
  client_id: 'alice-cli',
  client_secret: 'alice-secret-0123456789',
  actsAs: { login: 'alice', email: 'alice@example.test', groups: ['devs', 'ops'] },
};
const introspector: TestClient = {
  client_id: 'rs-introspect',
  client_secret: 'rs-introspect-secret-0123456789',
  token_endpoint_auth_method: 'client_secret_basic',
};
const NONCE_SECRET = 'a-session-secret-of-at-least-32-bytes-0123456789';

let idp: RunningOidcProvider;
let databaseUrl: string;
const pools: DatabasePool[] = [];
const apps: FastifyInstance[] = [];

interface Replica {
  app: FastifyInstance;
  server: ResourceServer;
}

async function replica(overrides: Record<string, unknown> = {}): Promise<Replica> {
  const config: ResourceServerConfig = resourceServerSchema.parse({ enabled: true, issuer: idp.issuer, audience: AUD, ...overrides });
  const pool = await createDatabasePool({ url: databaseUrl, schema: 'svc', poolSize: 2 });
  pools.push(pool);
  const app = await createApp({ service: 'svc', version: '1', errorShape: 'problem', logLevel: 'silent', openapi: { title: 't' } });
  const server = createResourceServer(config, { pool, publicUrl: PUBLIC_URL, log: app.log, nonceSecret: NONCE_SECRET });
  const route = async (request: Parameters<ResourceServer['verify']>[0], reply: Parameters<ResourceServer['verify']>[1]) => {
    const identity = await server.verify(request, reply);
    return {
      subject: identity.subject,
      username: identity.username,
      email: identity.email ?? null,
      groups: identity.groups,
      scopes: identity.scopes,
      clientId: identity.clientId ?? null,
      boundTo: identity.boundTo ?? null,
    };
  };
  app.get('/api/things/:id', route);
  app.post('/api/things/:id', route);
  await app.ready();
  apps.push(app);
  return { app, server };
}

interface Attempt {
  method?: string;
  path?: string;
  authorization?: string;
  /** One DPoP header, or several. */
  dpop?: string | string[];
  host?: string;
}

async function send(app: FastifyInstance, attempt: Attempt) {
  const headers: Record<string, string | string[]> = {};
  if (attempt.authorization) headers.authorization = attempt.authorization;
  if (attempt.dpop) headers.dpop = attempt.dpop;
  if (attempt.host) headers.host = attempt.host;
  const response = await app.inject({ method: (attempt.method ?? 'GET') as 'GET', url: attempt.path ?? PATH, headers });
  return {
    status: response.statusCode,
    challenge: String(response.headers['www-authenticate'] ?? ''),
    retryAfter: response.headers['retry-after'],
    nonce: response.headers['dpop-nonce'] as string | undefined,
    body: response.json() as Record<string, unknown>,
  };
}

let oracleAs: oauth.AuthorizationServer | undefined;
async function discover(): Promise<oauth.AuthorizationServer> {
  const url = new URL(idp.issuer);
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { [oauth.allowInsecureRequests]: true }));
}

/** The same request put to oauth4webapi, at the URL the client addressed (the public URL, not the Host header). */
async function oracleAccepts(attempt: Attempt, options: oauth.ValidateJWTAccessTokenOptions = {}): Promise<boolean> {
  oracleAs ??= await discover();
  const headers = new Headers();
  if (attempt.authorization) headers.set('authorization', attempt.authorization);
  for (const proof of [attempt.dpop ?? []].flat()) headers.append('dpop', proof);
  const request = new Request(`${PUBLIC_URL}${attempt.path ?? PATH}`, { method: attempt.method ?? 'GET', headers });
  try {
    await oauth.validateJwtAccessToken(oracleAs, request, AUD, { [oauth.allowInsecureRequests]: true, ...options });
    return true;
  } catch (error) {
    if (process.env.ORACLE_DEBUG) console.log('oracle refused:', error);
    return false;
  }
}

/** Ours refuses with `error` on the `scheme` challenge, and the oracle refuses too. */
async function expectRefused(app: FastifyInstance, attempt: Attempt, scheme: 'DPoP' | 'Bearer', error: string, description?: RegExp) {
  const result = await send(app, attempt);
  expect(result.status, JSON.stringify(result.body)).toBe(error === 'invalid_request' ? 400 : 401);
  expect(result.challenge).toMatch(new RegExp(`^${scheme} error="${error}", error_description="[^"]+"`));
  if (description) expect(result.body.detail).toMatch(description);
  expect(result.body).toMatchObject({ type: 'https://boxyard.io/problems/' + (error === 'invalid_request' ? 'bad-request' : 'authentication') });
  expect(await oracleAccepts(attempt), 'oauth4webapi accepted what we refused').toBe(false);
  return result;
}

async function expectAccepted(app: FastifyInstance, attempt: Attempt, oracle = true) {
  const result = await send(app, attempt);
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  if (oracle) expect(await oracleAccepts(attempt), 'oauth4webapi refused what we accepted').toBe(true);
  return result;
}

const dpopAttempt = async (token: string, key: DpopKey, proof: Partial<Parameters<typeof dpopProof>[1]> = {}): Promise<Attempt> => ({
  authorization: `DPoP ${token}`,
  dpop: await dpopProof(key, { htm: 'GET', htu: HTU, accessToken: token, ...proof }),
});

const now = () => Math.floor(Date.now() / 1000);
/** RFC 9068 claims of a token the provider could have issued to alice. */
const claims = (extra: JWTPayload = {}): JWTPayload => ({
  iss: idp.issuer,
  aud: AUD,
  sub: 'alice',
  client_id: alice.client_id,
  jti: randomUUID(),
  iat: now(),
  exp: now() + 300,
  scope: 'read',
  ...extra,
});

beforeAll(async () => {
  idp = await startOidcProvider({ resources: [AUD, OTHER_AUD], opaqueResources: [OPAQUE_AUD], clients: [alice, introspector] });
  databaseUrl = await createTestDatabase();
  await migrate(databaseUrl, 'svc', [resourceServerMigrations]);
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await Promise.all(pools.map((p) => p.end()));
  await idp?.stop();
});

describe('provider access tokens with DPoP', () => {
  let a: Replica;
  let b: Replica;
  let key: DpopKey;
  let bound: string;
  beforeAll(async () => {
    [a, b] = [await replica(), await replica()];
    key = await newDpopKey();
    bound = await idp.token({ resource: AUD, dpop: key, client: alice, scope: 'read write' });
  });

  it('accepts a DPoP-bound token with a fresh proof, and maps the claims', async () => {
    const { body } = await expectAccepted(a.app, await dpopAttempt(bound, key));
    expect(body).toEqual({
      subject: 'alice-cli',
      username: 'alice',
      email: 'alice@example.test',
      groups: ['devs', 'ops'],
      scopes: ['read', 'write'],
      clientId: 'alice-cli',
      boundTo: key.thumbprint,
    });
    // An Ed25519 proof key works as well.
    const edKey = await newDpopKey('EdDSA');
    await expectAccepted(b.app, await dpopAttempt(await idp.token({ resource: AUD, dpop: edKey, client: alice }), edKey));
  });

  it('refuses a proof replayed on another replica (the oracle keeps no jti cache: it would accept)', async () => {
    const attempt = await dpopAttempt(bound, key);
    await expectAccepted(a.app, attempt);
    const replayed = await send(b.app, attempt);
    expect(replayed.status).toBe(401);
    expect(replayed.challenge).toMatch(/^DPoP error="invalid_dpop_proof", error_description="the DPoP proof was already used \(jti\)"/);
    expect(await oracleAccepts(attempt)).toBe(true);
  });

  it('lets exactly one request pass when one proof is sent to both replicas at once, twice to one of them', async () => {
    for (let i = 0; i < 5; i++) {
      const attempt = await dpopAttempt(bound, key);
      const statuses = (await Promise.all([send(a.app, attempt), send(b.app, attempt), send(a.app, attempt)])).map((r) => r.status).sort();
      expect(statuses).toEqual([200, 401, 401]);
    }
  });

  it('refuses the bound token sent as Bearer (downgrade)', async () => {
    const { challenge } = await expectRefused(a.app, { authorization: `Bearer ${bound}` }, 'Bearer', 'invalid_token', /DPoP-bound/);
    expect(challenge).toMatch(/, DPoP algs="ES256 EdDSA RS256 PS256"$/);
  });

  it('refuses wrong htm and wrong htu, and builds htu from the public URL, not the Host header', async () => {
    await expectRefused(a.app, await dpopAttempt(bound, key, { htm: 'POST' }), 'DPoP', 'invalid_dpop_proof', /htm/);
    await expectRefused(a.app, await dpopAttempt(bound, key, { htu: `${PUBLIC_URL}/api/things/2` }), 'DPoP', 'invalid_dpop_proof', /htu/);
    await expectRefused(a.app, await dpopAttempt(bound, key, { htu: `https://evil.example.test${PATH}` }), 'DPoP', 'invalid_dpop_proof', /htu/);
    await expectRefused(
      a.app,
      { ...(await dpopAttempt(bound, key, { htu: `http://evil.example.test${PATH}` })), host: 'evil.example.test' },
      'DPoP',
      'invalid_dpop_proof',
      /htu/,
    );
    // The method counts: a GET proof does not pass on a POST.
    await expectRefused(a.app, { ...(await dpopAttempt(bound, key)), method: 'POST' }, 'DPoP', 'invalid_dpop_proof', /htm/);
  });

  it('compares htu after normalisation (case of scheme and host, default port, query and fragment)', async () => {
    await expectAccepted(a.app, await dpopAttempt(bound, key, { htu: `HTTPS://Boxes.Example.TEST:443${PATH}?page=2#top` }));
    await expectAccepted(a.app, { ...(await dpopAttempt(bound, key)), path: `${PATH}?page=2` });
    await expectAccepted(a.app, { ...(await dpopAttempt(bound, key, { htm: 'POST' })), method: 'POST' });
  });

  it('refuses an old proof and one from the future', async () => {
    await expectRefused(a.app, await dpopAttempt(bound, key, { iat: now() - 400 }), 'DPoP', 'invalid_dpop_proof', /too old/);
    await expectRefused(a.app, await dpopAttempt(bound, key, { iat: now() + 400 }), 'DPoP', 'invalid_dpop_proof', /future/);
  });

  it('refuses a proof signed by another key than its embedded jwk, or than the key the token is bound to', async () => {
    const other = await newDpopKey();
    const mismatched: DpopKey = { keyPair: other.keyPair, publicJwk: key.publicJwk, thumbprint: key.thumbprint };
    await expectRefused(a.app, await dpopAttempt(bound, mismatched), 'DPoP', 'invalid_dpop_proof', /signature/);
    await expectRefused(a.app, await dpopAttempt(bound, other), 'DPoP', 'invalid_token', /bound/);
  });

  it('refuses broken proofs: typ, HMAC alg, a private key in jwk, ath, missing or doubled header, no cnf', async () => {
    await expectRefused(a.app, await dpopAttempt(bound, key, { typ: 'JWT' }), 'DPoP', 'invalid_dpop_proof', /typ/);
    await expectRefused(a.app, await dpopAttempt(bound, key, { accessToken: `${bound}x` }), 'DPoP', 'invalid_dpop_proof', /ath/);
    const privateJwk = await exportJWK(key.keyPair.privateKey);
    await expectRefused(a.app, await dpopAttempt(bound, { ...key, publicJwk: privateJwk }), 'DPoP', 'invalid_dpop_proof', /public key/);
    const hmac = await new SignJWT({ htm: 'GET', htu: HTU, ath: 'x' })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.publicJwk })
      .setJti(randomUUID())
      .setIssuedAt()
      .sign(new TextEncoder().encode(JSON.stringify(key.publicJwk)));
    await expectRefused(a.app, { authorization: `DPoP ${bound}`, dpop: hmac }, 'DPoP', 'invalid_dpop_proof', /algorithm/);
    await expectRefused(a.app, { authorization: `DPoP ${bound}` }, 'DPoP', 'invalid_dpop_proof', /no DPoP proof/);
    const twice = await dpopAttempt(bound, key);
    await expectRefused(
      a.app,
      { ...twice, dpop: [twice.dpop as string, await dpopProof(key, { htm: 'GET', htu: HTU, accessToken: bound })] },
      'DPoP',
      'invalid_dpop_proof',
      /more than one/,
    );
    const unbound = await idp.token({ resource: AUD, client: alice });
    await expectRefused(a.app, await dpopAttempt(unbound, key), 'DPoP', 'invalid_token', /not DPoP-bound/);
  });

  it('refuses a token for another audience', async () => {
    const foreign = await idp.token({ resource: OTHER_AUD, dpop: key, client: alice });
    await expectRefused(a.app, await dpopAttempt(foreign, key), 'DPoP', 'invalid_token', /aud/);
    await expectRefused(a.app, { authorization: `Bearer ${await idp.token({ resource: OTHER_AUD, client: alice })}` }, 'Bearer', 'invalid_token', /aud/);
  });

  it('refuses an expired token, a wrong typ, a foreign issuer (all signed with the provider key)', async () => {
    await expectRefused(
      a.app,
      { authorization: `Bearer ${await idp.sign(claims({ iat: now() - 900, exp: now() - 120 }))}` },
      'Bearer',
      'invalid_token',
      /expired/,
    );
    await expectRefused(a.app, { authorization: `Bearer ${await idp.sign(claims(), { typ: 'JWT' })}` }, 'Bearer', 'invalid_token', /typ/);
    await expectRefused(
      a.app,
      { authorization: `Bearer ${await idp.sign(claims({ iss: 'https://other-idp.example.test' }))}` },
      'Bearer',
      'invalid_token',
      /issuer/,
    );
    await expectRefused(a.app, { authorization: `Bearer ${await idp.sign(claims({ client_id: undefined }))}` }, 'Bearer', 'invalid_token', /client_id/);
    // The media-type spelling of the typ is the same typ.
    await expectAccepted(a.app, { authorization: `Bearer ${await idp.sign(claims(), { typ: 'application/at+jwt' })}` });
    const expiredBound = await idp.sign(claims({ iat: now() - 900, exp: now() - 120, cnf: { jkt: key.thumbprint } }));
    await expectRefused(a.app, await dpopAttempt(expiredBound, key), 'DPoP', 'invalid_token', /expired/);
  });

  it('refuses an unknown kid, refetching the keys at most once per jwks_refetch_min_seconds', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const forged = () => new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'k-not-served' }).sign(privateKey);
    await send(a.app, { authorization: `Bearer ${await idp.token({ resource: AUD, client: alice })}` }); // keys loaded
    const before = idp.jwksRequests();
    await expectRefused(a.app, { authorization: `Bearer ${await forged()}` }, 'Bearer', 'invalid_token', /key the provider does not publish/);
    for (let i = 0; i < 5; i++) expect((await send(a.app, { authorization: `Bearer ${await forged()}` })).status).toBe(401);
    // The first unknown kid may refetch (when the last fetch is older than 30 s), none of the next five.
    expect(idp.jwksRequests() - before).toBeLessThanOrEqual(1);
  });

  it('refuses HS256 alg confusion (the provider public key as HMAC secret)', async () => {
    const jwks = (await (await fetch(`${idp.issuer}/jwks`)).json()) as { keys: Record<string, unknown>[] };
    const publicKey = jwks.keys.find((k) => k.kid === idp.kid())!;
    for (const secret of [JSON.stringify(publicKey), String(publicKey.x)]) {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: idp.kid() }).sign(new TextEncoder().encode(secret));
      await expectRefused(a.app, { authorization: `Bearer ${token}` }, 'Bearer', 'invalid_token', /algorithm/);
    }
  });

  it('accepts an unbound Bearer token, and refuses a DPoP proof sent along with Bearer', async () => {
    const plain = await idp.token({ resource: AUD, client: alice });
    const { body } = await expectAccepted(a.app, { authorization: `Bearer ${plain}` });
    expect(body).toMatchObject({ username: 'alice', boundTo: null });
    await expectRefused(
      a.app,
      { authorization: `Bearer ${plain}`, dpop: await dpopProof(key, { htm: 'GET', htu: HTU, accessToken: plain }) },
      'Bearer',
      'invalid_request',
      /DPoP proof/,
    );
  });

  it('challenges a request without credentials, and recognizes only what is the provider’s', async () => {
    const result = await send(a.app, {});
    expect(result.status).toBe(401);
    expect(result.challenge).toBe('DPoP algs="ES256 EdDSA RS256 PS256", Bearer');
    expect(a.server.challenge()).toBe(result.challenge);
    const recognizes = (authorization: string) => a.server.recognizes({ headers: { authorization } } as never);
    expect(recognizes(`DPoP ${bound}`)).toBe(true);
    expect(recognizes(`Bearer ${bound}`)).toBe(true);
    expect(recognizes(`Bearer ${await new SignJWT({ iss: 'boxyard' }).setProtectedHeader({ alg: 'HS256' }).sign(new Uint8Array(32))}`)).toBe(false);
    expect(recognizes('Bearer bx_0123456789abcdef')).toBe(false);
    expect(recognizes('Basic YWxpY2U6cw==')).toBe(false);
  });

  it('verifies over a real socket too', async () => {
    const port = await freePort();
    const { app: listening } = await replica();
    await listening.listen({ port, host: '127.0.0.1' });
    const attempt = await dpopAttempt(bound, key);
    const response = await fetch(`http://127.0.0.1:${port}${PATH}`, { headers: { authorization: attempt.authorization!, dpop: attempt.dpop as string } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { boundTo: string }).boundTo).toBe(key.thumbprint);
  });
});

describe('policy options', () => {
  it('dpop.required refuses Bearer tokens altogether and offers only DPoP', async () => {
    const { app, server } = await replica({ dpop: { required: true } });
    expect(server.challenge()).toBe('DPoP algs="ES256 EdDSA RS256 PS256"');
    const result = await send(app, { authorization: `Bearer ${await idp.token({ resource: AUD, client: alice })}` });
    expect(result.status).toBe(401);
    expect(result.challenge).toMatch(
      /^DPoP error="invalid_token", error_description="this service accepts only DPoP-bound access tokens[^"]*", algs="ES256 EdDSA RS256 PS256"$/,
    );
    // The oracle's requireDPoP option agrees.
    const request = new Request(HTU, { headers: { authorization: `Bearer ${await idp.token({ resource: AUD, client: alice })}` } });
    await expect(oauth.validateJwtAccessToken(await discover(), request, AUD, { [oauth.allowInsecureRequests]: true, requireDPoP: true })).rejects.toThrow();
    const key = await newDpopKey();
    await expectAccepted(app, await dpopAttempt(await idp.token({ resource: AUD, dpop: key, client: alice }), key));
  });

  it('use_nonce: the first proof gets use_dpop_nonce + DPoP-Nonce, the retry passes on any replica (the oracle has no nonces)', async () => {
    // Nonces rotate every 120 s: start well inside a slot so the assertions below see one nonce.
    const intoSlot = (Date.now() / 1000) % NONCE_SLOT_SECONDS;
    if (intoSlot > NONCE_SLOT_SECONDS - 15) await new Promise((resolve) => setTimeout(resolve, (NONCE_SLOT_SECONDS - intoSlot + 0.5) * 1000));
    const [n1, n2] = [await replica({ dpop: { use_nonce: true } }), await replica({ dpop: { use_nonce: true } })];
    const key = await newDpopKey();
    const token = await idp.token({ resource: AUD, dpop: key, client: alice });
    const first = await send(n1.app, await dpopAttempt(token, key));
    expect(first.status).toBe(401);
    expect(first.challenge).toMatch(/^DPoP error="use_dpop_nonce", error_description="a DPoP nonce is required[^"]*", algs=/);
    expect(first.nonce).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
    const retried = await expectAccepted(n1.app, await dpopAttempt(token, key, { nonce: first.nonce! }));
    expect(retried.nonce).toBeUndefined(); // still current: nothing new to hand out
    await expectAccepted(n2.app, await dpopAttempt(token, key, { nonce: first.nonce! }));
    // A nonce from the previous slot still passes, and the response carries the current one.
    const stale = createNonceIssuer(NONCE_SECRET).current(now() - 120);
    const refreshed = await expectAccepted(n2.app, await dpopAttempt(token, key, { nonce: stale }));
    expect(refreshed.nonce).toBe(first.nonce);
    // Older, forged, or under another secret: refused with a new nonce.
    for (const nonce of [
      createNonceIssuer(NONCE_SECRET).current(now() - 360),
      createNonceIssuer('another-secret-of-at-least-32-bytes-0123').current(now()),
      'made-up',
    ]) {
      const refused = await send(n1.app, await dpopAttempt(token, key, { nonce }));
      expect(refused.status).toBe(401);
      expect(refused.challenge).toMatch(/^DPoP error="use_dpop_nonce"/);
      expect(refused.nonce).toBe(first.nonce);
    }
  });

  it('introspects opaque tokens (DPoP-bound and not), caching the answer', async () => {
    const { app, server } = await replica({
      audience: OPAQUE_AUD,
      introspection: { client_id: introspector.client_id, client_secret: introspector.client_secret, auth_method: 'client_secret_basic' },
    });
    const key = await newDpopKey();
    const opaque = await idp.token({ resource: OPAQUE_AUD, dpop: key, client: alice });
    expect(opaque.split('.')).toHaveLength(1);
    expect(server.recognizes({ headers: { authorization: `Bearer ${opaque}` } } as never)).toBe(true);
    const { body } = await expectAccepted(app, await dpopAttempt(opaque, key), false);
    expect(body).toMatchObject({ subject: 'alice-cli', clientId: 'alice-cli', boundTo: key.thumbprint });
    const downgrade = await send(app, { authorization: `Bearer ${opaque}` });
    expect(downgrade.status).toBe(401);
    expect(downgrade.challenge).toMatch(/^Bearer error="invalid_token", error_description="the access token is DPoP-bound/);
    const other = await newDpopKey();
    expect((await send(app, await dpopAttempt(opaque, other))).challenge).toMatch(
      /^DPoP error="invalid_token", error_description="the DPoP proof is not signed with the key/,
    );
    expect((await send(app, { authorization: `Bearer ${await idp.token({ resource: OPAQUE_AUD, client: alice })}` })).status).toBe(200);
    const inactive = await send(app, { authorization: 'Bearer not-a-token-the-provider-issued' });
    expect(inactive.status).toBe(401);
    expect(inactive.challenge).toMatch(/^Bearer error="invalid_token", error_description="the access token is not active"/);
    // The answer is cached: with the provider gone, the token still passes for a while (a fresh proof each time).
    await idp.stop();
    try {
      await expectAccepted(app, await dpopAttempt(opaque, key), false);
    } finally {
      await idp.rotateKeys(); // starts it again, on the same port
      oracleAs = undefined; // with a new key
    }
  });

  it('re-checks exp when a verified token comes again (the verification is cached)', async () => {
    const { app } = await replica({ clock_skew_seconds: 0 });
    const attempt = { authorization: `Bearer ${await idp.sign(claims({ exp: now() + 2 }))}` };
    await expectAccepted(app, attempt);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const refused = await send(app, attempt);
    expect(refused.status).toBe(401);
    expect(refused.challenge).toMatch(/^Bearer error="invalid_token", error_description="the access token has expired"/);
    expect(await oracleAccepts(attempt, { [oauth.clockTolerance]: 0 })).toBe(false);
  });

  it('answers 503 with Retry-After while the provider cannot be reached', async () => {
    const { app } = await replica({ issuer: `http://127.0.0.1:${await freePort()}` });
    const result = await send(app, { authorization: `Bearer ${await idp.token({ resource: AUD, client: alice })}` });
    expect(result.status).toBe(503);
    expect(result.retryAfter).toBe('5');
    expect(result.body).toMatchObject({ detail: 'The identity provider is unreachable; try again shortly' });
  });
});

describe('key rotation', () => {
  it('accepts tokens signed with a rotated provider key without a restart', async () => {
    const { app } = await replica({ jwks_refetch_min_seconds: 1 });
    const key = await newDpopKey();
    await expectAccepted(app, await dpopAttempt(await idp.token({ resource: AUD, dpop: key, client: alice }), key));
    const before = idp.kid();
    await idp.rotateKeys();
    expect(idp.kid()).not.toBe(before);
    const rotated = await idp.token({ resource: AUD, dpop: key, client: alice });
    await new Promise((resolve) => setTimeout(resolve, 1100)); // past the refetch cooldown
    oracleAs = await discover(); // oauth4webapi caches keys per server object for 60 s at least
    await expectAccepted(app, await dpopAttempt(rotated, key));
  });
});
