// A real OpenID provider for tests: `oidc-provider` (OpenID certified) on a free loopback port, in the test's
// process. It issues RFC 9068 JWT access tokens for the resources the test names (resource indicators), binds them
// to a DPoP key when the token request carries a proof, serves client_credentials and authorization code + PKCE
// (its development login form: any password), introspection and RP-initiated logout. `rotateKeys()` restarts it on
// the same port with a new signing key, as a provider rotating its keys would.
import { randomBytes, randomUUID, type webcrypto } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTHeaderParameters, type JWTPayload } from 'jose';
import * as oauth from 'oauth4webapi';
import Provider, { errors, type Configuration } from 'oidc-provider';
import { freePort } from './ports.ts';

export interface TestUser {
  /** The login typed into the provider's form; also `sub` and `preferred_username`. */
  login: string;
  email?: string;
  groups?: string[];
}

export interface TestClient {
  client_id: string;
  client_secret: string;
  /** Tokens of this client act for this user (extra claims on client_credentials tokens). */
  actsAs?: TestUser;
  redirect_uris?: string[];
  post_logout_redirect_uris?: string[];
  /**
   * How it authenticates at the token and introspection endpoints (default client_secret_post); `none`: a public
   * client (authorization code + PKCE alone; its secret is ignored).
   */
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post' | 'none';
}

export interface OidcProviderOptions {
  /** Resource indicators (audiences) the provider issues JWT access tokens for. */
  resources: string[];
  clients?: TestClient[];
  users?: TestUser[];
  accessTokenTtlSeconds?: number;
  /** Resources (also accepted without being in `resources`) whose access tokens are opaque: introspection only. */
  opaqueResources?: string[];
  /**
   * The issuer's host name. `localhost` puts the provider on another site than services on 127.0.0.1 (as a real
   * provider is), so browser tests meet SameSite rules as users do. Default 127.0.0.1.
   */
  host?: 'localhost' | '127.0.0.1';
  /**
   * Authorization-code sign-ins that name no resource get an access token for userinfo instead of one for
   * `resources[0]`; the ID token then carries only `sub` and the protocol claims, the rest is at userinfo (as
   * with providers that keep profile claims there). Default false.
   */
  userinfoTokens?: boolean;
}

export interface DpopKey {
  keyPair: webcrypto.CryptoKeyPair;
  publicJwk: JWK;
  thumbprint: string;
}

export interface RunningOidcProvider {
  issuer: string;
  /** A confidential client with client_credentials (made for the run unless given). */
  client: TestClient;
  /** Kid of the current signing key. */
  kid(): string;
  /** A client_credentials access token for `resource`, DPoP-bound to `dpop` when given. */
  token(options: { resource: string; dpop?: DpopKey; client?: TestClient; scope?: string }): Promise<string>;
  /**
   * Signs a JWT with the provider's current key (header: its kid, ES256, typ at+jwt unless overridden), for tests
   * of what a verifier must refuse although the signature is good (expired, wrong typ...). A real provider never
   * offers this.
   */
  sign(claims: JWTPayload, header?: Partial<Omit<JWTHeaderParameters, 'alg'>>): Promise<string>;
  /** How many times the JWKS was fetched since start. */
  jwksRequests(): number;
  /** Restarts on the same port with a new signing key (old tokens no longer verify). */
  rotateKeys(): Promise<void>;
  stop(): Promise<void>;
}

export async function newDpopKey(alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<DpopKey> {
  const keyPair = (await generateKeyPair(alg, { extractable: true })) as webcrypto.CryptoKeyPair;
  const publicJwk = await exportJWK(keyPair.publicKey);
  return { keyPair, publicJwk, thumbprint: await calculateJwkThumbprint(publicJwk) };
}

/** A DPoP proof (RFC 9449 §4.2); every claim can be overridden to build broken proofs. */
export async function dpopProof(
  key: DpopKey,
  options: {
    htm: string;
    htu: string;
    accessToken?: string;
    nonce?: string;
    iat?: number;
    jti?: string;
    typ?: string;
    alg?: string;
    claims?: Record<string, unknown>;
  },
): Promise<string> {
  const ath = options.accessToken
    ? Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(options.accessToken))).toString('base64url')
    : undefined;
  return new SignJWT({ htm: options.htm, htu: options.htu, ...(ath ? { ath } : {}), ...(options.nonce ? { nonce: options.nonce } : {}), ...options.claims })
    .setProtectedHeader({ typ: options.typ ?? 'dpop+jwt', alg: options.alg ?? (key.publicJwk.kty === 'OKP' ? 'EdDSA' : 'ES256'), jwk: key.publicJwk })
    .setJti(options.jti ?? randomUUID())
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .sign(key.keyPair.privateKey);
}

async function signingKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: `k-${randomBytes(6).toString('hex')}`, alg: 'ES256', use: 'sig' };
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<RunningOidcProvider> {
  const port = await freePort();
  const issuer = `http://${options.host ?? '127.0.0.1'}:${port}`;
  const client: TestClient = { client_id: `svc-${randomBytes(4).toString('hex')}`, client_secret: randomBytes(24).toString('base64url') };
  const clients = [client, ...(options.clients ?? [])];
  const users = new Map((options.users ?? []).map((u) => [u.login, u]));
  for (const c of clients) if (c.actsAs) users.set(c.actsAs.login, c.actsAs);
  let key = await signingKey();
  let server: Server | undefined;
  let jwksRequests = 0;

  const configuration = (): Configuration => ({
    jwks: { keys: [key] },
    clients: clients.map((c) => ({
      client_id: c.client_id,
      ...(c.token_endpoint_auth_method === 'none' ? {} : { client_secret: c.client_secret }),
      grant_types: c.redirect_uris
        ? c.token_endpoint_auth_method === 'none'
          ? ['authorization_code']
          : ['authorization_code', 'client_credentials']
        : ['client_credentials'],
      response_types: c.redirect_uris ? ['code'] : [],
      redirect_uris: c.redirect_uris ?? [],
      post_logout_redirect_uris: c.post_logout_redirect_uris ?? [],
      token_endpoint_auth_method: c.token_endpoint_auth_method ?? 'client_secret_post',
      id_token_signed_response_alg: 'ES256',
    })),
    pkce: { required: () => true },
    scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
    claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email'], groups: ['groups'] },
    async findAccount(_ctx, sub) {
      const user = users.get(sub) ?? { login: sub };
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          preferred_username: user.login,
          name: user.login,
          email: user.email ?? `${user.login}@example.test`,
          groups: user.groups ?? [],
        }),
      };
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      dPoP: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => (options.userinfoTokens && !oneOf ? undefined : options.resources[0]!),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          const ttl = options.accessTokenTtlSeconds ?? 600;
          if (options.opaqueResources?.includes(resource))
            return { scope: 'openid profile email groups read write', audience: resource, accessTokenTTL: ttl, accessTokenFormat: 'opaque' };
          if (!options.resources.includes(resource)) throw new errors.InvalidTarget();
          return {
            scope: 'openid profile email groups read write',
            audience: resource,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    // client_credentials tokens of a client that acts for a user carry that user's claims (RFC 9068 §2.2 allows
    // any claims); authorization-code tokens carry the signed-in user's.
    async extraTokenClaims(_ctx, token) {
      const acting = clients.find((c) => c.client_id === token.clientId)?.actsAs;
      const login = acting?.login ?? (token as { accountId?: string }).accountId;
      const user = login ? (users.get(login) ?? { login }) : undefined;
      return user ? { preferred_username: user.login, email: user.email ?? `${user.login}@example.test`, groups: user.groups ?? [] } : undefined;
    },
    ttl: { AccessToken: options.accessTokenTtlSeconds ?? 600, ClientCredentials: options.accessTokenTtlSeconds ?? 600 },
  });

  const listen = async () => {
    const provider = new Provider(issuer, configuration());
    const callback = provider.callback();
    server = createServer((request, response) => {
      if (request.url?.startsWith('/jwks')) jwksRequests++;
      void callback(request, response);
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
  };
  const close = () =>
    new Promise<void>((resolve) => {
      server?.closeAllConnections();
      server?.close(() => resolve());
    });
  await listen();

  const discovery = async () => {
    const url = new URL(issuer);
    return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { [oauth.allowInsecureRequests]: true }));
  };

  return {
    issuer,
    client,
    kid: () => key.kid!,
    async token({ resource, dpop, client: who = client, scope }) {
      const as = await discovery();
      const c: oauth.Client = { client_id: who.client_id };
      const DPoP = dpop ? oauth.DPoP(c, dpop.keyPair) : undefined;
      const parameters = new URLSearchParams({ resource, ...(scope ? { scope } : {}) });
      const auth =
        who.token_endpoint_auth_method === 'client_secret_basic' ? oauth.ClientSecretBasic(who.client_secret) : oauth.ClientSecretPost(who.client_secret);
      const request = () => oauth.clientCredentialsGrantRequest(as, c, auth, parameters, { [oauth.allowInsecureRequests]: true, ...(DPoP ? { DPoP } : {}) });
      let result;
      try {
        result = await oauth.processClientCredentialsResponse(as, c, await request());
      } catch (error) {
        if (!oauth.isDPoPNonceError(error)) throw error;
        result = await oauth.processClientCredentialsResponse(as, c, await request()); // the handle kept the nonce
      }
      return result.access_token;
    },
    async sign(claims, header) {
      return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid!, ...header }).sign(await importJWK(key, 'ES256'));
    },
    jwksRequests: () => jwksRequests,
    async rotateKeys() {
      await close();
      key = await signingKey();
      await listen();
    },
    stop: close,
  };
}
