// The access-token verifier for an external OpenID provider (`auth.resource_server`): `Authorization: Bearer`
// with an RFC 9068 JWT or an opaque token (introspection), or `Authorization: DPoP` with a proof checked in full
// (RFC 9449 §4.3, §7), a jti replay cache shared by every replica, and optional stateless server nonces.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { JWTPayload } from 'jose';
import type { DatabasePool } from 'slonik';
import type { ResourceServerConfig } from '../config/auth-section.ts';
import { HttpError } from '../http/http-error.ts';
import { boundKey, checkIntrospection, createJwtAccessTokenVerifier, type TokenExpectations } from './access-token.ts';
import { createNonceIssuer, type NonceCheck } from './dpop-nonce.ts';
import { verifyDpopProof } from './dpop-proof.ts';
import { challengeFor, ProviderUnavailableError, providerUnavailable, toHttpError, TokenError, type ChallengeOptions, type Scheme } from './errors.ts';
import { expectedHtu } from './htu.ts';
import { mapIdentity, type ProviderIdentity } from './identity.ts';
import { createIntrospector } from './introspection.ts';
import { createProviderSource, type ProviderLog } from './provider.ts';
import { createReplayCache } from './replay-cache.ts';

export type { ProviderIdentity } from './identity.ts';

export interface ResourceServerDeps {
  /** The service's pool: the jti replay table (resourceServerMigrations) lives in its schema. */
  pool: DatabasePool;
  /** The URL clients reach the service at (publicBaseUrl): DPoP `htu` is checked against it plus the path. */
  publicUrl: string;
  log: ProviderLog;
  /** A secret every replica shares (e.g. the session secret), required by `dpop.use_nonce`; a key is derived from it. */
  nonceSecret?: string;
}

export interface ResourceServer {
  /**
   * Whether the request's credentials are the provider's to judge: `Authorization: DPoP …`, or `Bearer` with a JWT
   * whose `iss` is the provider (or any non-JWT token when introspection is configured). Cheap, no I/O.
   */
  recognizes(request: FastifyRequest): boolean;
  /**
   * Verifies the request's token (and DPoP proof). Refusals are HttpErrors: 401 (400 for a malformed request) with
   * an RFC 6750 / RFC 9449 WWW-Authenticate (and DPoP-Nonce), 503 + Retry-After when the provider is unreachable.
   * Given `reply`, a fresh DPoP-Nonce is set on it when the proof's nonce is about to expire.
   */
  verify(request: FastifyRequest, reply?: FastifyReply): Promise<ProviderIdentity>;
  /** A 401 invalid_token for a token that verified but whose holder may not act here (e.g. a disabled account). */
  refuse(request: FastifyRequest, description: string): HttpError;
  /** WWW-Authenticate value for a 401 to a request without credentials: `DPoP algs="…", Bearer` (only DPoP when dpop.required). */
  challenge(): string;
  close(): Promise<void>;
}

const AUTHORIZATION = /^([A-Za-z]+) +([A-Za-z0-9\-._~+/]+=*) *$/;

/** All values of a header as sent (node joins repeated unknown headers into one string). */
function headerValues(request: FastifyRequest, name: string): string[] {
  const raw = request.raw.rawHeaders;
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
  return values;
}

function issuerOf(jwt: string): unknown {
  try {
    return (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { iss?: unknown }).iss;
  } catch {
    return undefined;
  }
}

/** What verifying needs, set up once: the settings, the provider's keys and endpoints, the replay cache, the nonces. */
interface Verifier {
  config: ResourceServerConfig;
  issuer: string;
  audiences: string[];
  publicUrl: string;
  source: ReturnType<typeof createProviderSource>;
  introspector: ReturnType<typeof createIntrospector>;
  verifyJwt: ReturnType<typeof createJwtAccessTokenVerifier>;
  replay: ReturnType<typeof createReplayCache>;
  nonces: ReturnType<typeof createNonceIssuer> | undefined;
  challengeOptions: ChallengeOptions;
  skew: number;
}

export function createResourceServer(config: ResourceServerConfig, deps: ResourceServerDeps): ResourceServer {
  const verifier = setUp(config, deps);
  return {
    recognizes: (request) => recognizes(verifier, request),
    verify: (request, reply) => verify(verifier, request, reply),
    refuse(request, description) {
      const scheme: Scheme = /^dpop /i.test(request.headers.authorization ?? '') ? 'DPoP' : 'Bearer';
      return toHttpError(new TokenError(scheme, 'invalid_token', description), verifier.challengeOptions);
    },
    challenge: () => challengeFor(verifier.challengeOptions),
    close: async () => {},
  };
}

function setUp(config: ResourceServerConfig, deps: ResourceServerDeps): Verifier {
  const { issuer, audience } = config;
  if (!config.enabled || !issuer || !audience) throw new Error('auth.resource_server: enabled, issuer and audience are required to verify provider tokens');
  if (config.dpop.use_nonce && !deps.nonceSecret) throw new Error('auth.resource_server.dpop.use_nonce needs a secret shared by every replica (nonceSecret)');
  expectedHtu(deps.publicUrl, '/'); // a bad public URL fails here, at start
  return {
    config,
    issuer,
    audiences: typeof audience === 'string' ? [audience] : audience,
    publicUrl: deps.publicUrl,
    source: createProviderSource({ ...config, issuer }, deps.log),
    introspector: createIntrospector(),
    verifyJwt: createJwtAccessTokenVerifier(),
    replay: createReplayCache(deps.pool),
    nonces: config.dpop.use_nonce && deps.nonceSecret ? createNonceIssuer(deps.nonceSecret) : undefined,
    challengeOptions: { dpopAlgorithms: config.dpop.algorithms, dpopRequired: config.dpop.required },
    skew: config.clock_skew_seconds,
  };
}

function recognizes({ config, issuer }: Verifier, request: FastifyRequest): boolean {
  const match = AUTHORIZATION.exec(request.headers.authorization ?? '');
  if (!match) return false;
  const scheme = match[1]!.toLowerCase();
  if (scheme === 'dpop') return true;
  if (scheme !== 'bearer') return false;
  const parts = match[2]!.split('.').length;
  if (parts === 3) return issuerOf(match[2]!) === issuer;
  return parts === 1 && config.introspection !== undefined;
}

async function verify(verifier: Verifier, request: FastifyRequest, reply: FastifyReply | undefined): Promise<ProviderIdentity> {
  const now = Date.now() / 1000;
  try {
    return await check(verifier, request, reply, now);
  } catch (error) {
    if (error instanceof TokenError) {
      // A client that is refused may retry at once: give it the nonce it will need (RFC 9449 §9).
      throw toHttpError(error, verifier.challengeOptions, error.scheme === 'DPoP' && verifier.nonces ? { 'DPoP-Nonce': verifier.nonces.current(now) } : {});
    }
    if (error instanceof ProviderUnavailableError) {
      request.log.warn({ err: error }, 'identity provider unavailable');
      throw providerUnavailable();
    }
    throw error;
  }
}

async function tokenClaims(verifier: Verifier, token: string, scheme: Scheme, now: number): Promise<JWTPayload> {
  const { config } = verifier;
  const parts = token.split('.').length;
  if (parts === 5) throw new TokenError(scheme, 'invalid_token', 'encrypted access tokens are not supported');
  if (parts !== 3 && (parts !== 1 || !config.introspection))
    throw new TokenError(scheme, 'invalid_token', 'the access token is not a JWT and introspection is not configured');
  const provider = await verifier.source.get();
  const expect: TokenExpectations = {
    issuer: verifier.issuer,
    audiences: verifier.audiences,
    algorithms: config.algorithms,
    skewSeconds: verifier.skew,
    now,
    scheme,
  };
  if (parts === 3) return verifier.verifyJwt(token, provider.keys, expect);
  return checkIntrospection(await verifier.introspector.introspect(provider.introspection!, token), expect);
}

async function check(verifier: Verifier, request: FastifyRequest, reply: FastifyReply | undefined, now: number): Promise<ProviderIdentity> {
  const { challengeOptions } = verifier;
  const authorization = request.headers.authorization;
  if (!authorization) throw new HttpError(401, 'Authentication required', { headers: { 'WWW-Authenticate': challengeFor(challengeOptions) } });
  const match = AUTHORIZATION.exec(authorization);
  const scheme = (match?.[1] ?? authorization.split(' ', 1)[0]!).toLowerCase();
  if (scheme !== 'bearer' && scheme !== 'dpop') {
    throw new HttpError(401, 'Unsupported authorization scheme: use DPoP or Bearer', { headers: { 'WWW-Authenticate': challengeFor(challengeOptions) } });
  }
  const asScheme: Scheme = scheme === 'dpop' ? 'DPoP' : 'Bearer';
  if (!match) throw new TokenError(asScheme, 'invalid_request', 'the Authorization header is malformed');
  const token = match[2]!;
  const proofs = headerValues(request, 'dpop');
  if (asScheme === 'Bearer') return checkBearer(verifier, token, proofs, now);
  return checkDpop(verifier, request, reply, token, proofs, now);
}

async function checkBearer(verifier: Verifier, token: string, proofs: string[], now: number): Promise<ProviderIdentity> {
  const { config } = verifier;
  if (config.dpop.required)
    throw new TokenError('DPoP', 'invalid_token', 'this service accepts only DPoP-bound access tokens (Authorization: DPoP with a DPoP proof)');
  // RFC 9449 §7.2: a proof only goes with the DPoP scheme; silently ignoring it would hide a client bug.
  if (proofs.length > 0) throw new TokenError('Bearer', 'invalid_request', 'a DPoP proof was sent with a Bearer token: use Authorization: DPoP');
  const claims = await tokenClaims(verifier, token, 'Bearer', now);
  // A bound token without its proof is what a thief would send: the downgrade is refused (RFC 9449 §7.2).
  if (boundKey(claims)) throw new TokenError('Bearer', 'invalid_token', 'the access token is DPoP-bound: send it with Authorization: DPoP and a DPoP proof');
  return mapIdentity(claims, config.claims, verifier.issuer, 'Bearer');
}

async function checkDpop(
  verifier: Verifier,
  request: FastifyRequest,
  reply: FastifyReply | undefined,
  token: string,
  proofs: string[],
  now: number,
): Promise<ProviderIdentity> {
  const { config, nonces, skew } = verifier;
  if (proofs.length !== 1)
    throw new TokenError('DPoP', 'invalid_dpop_proof', proofs.length === 0 ? 'the request has no DPoP proof' : 'the request has more than one DPoP header');
  const htu = expectedHtu(verifier.publicUrl, request.url);
  if (!htu) throw new TokenError('DPoP', 'invalid_request', 'the request URL is malformed');
  // The proof first: no I/O, and a request that fails it never reaches the provider or the database.
  const proof = await verifyDpopProof(proofs[0]!, {
    method: request.method,
    htu,
    accessToken: token,
    algorithms: config.dpop.algorithms,
    maxAgeSeconds: config.dpop.proof_max_age_seconds,
    skewSeconds: skew,
    now,
  });
  let nonce: NonceCheck | undefined;
  if (nonces) {
    nonce = proof.nonce === undefined ? 'invalid' : nonces.check(proof.nonce, now);
    if (nonce === 'invalid')
      throw new TokenError(
        'DPoP',
        'use_dpop_nonce',
        proof.nonce === undefined ? 'a DPoP nonce is required: use the one in DPoP-Nonce' : 'the DPoP nonce is not valid (any more): use the one in DPoP-Nonce',
      );
  }
  const claims = await tokenClaims(verifier, token, 'DPoP', now);
  const jkt = boundKey(claims);
  if (!jkt) throw new TokenError('DPoP', 'invalid_token', 'the access token is not DPoP-bound (no cnf.jkt)');
  if (jkt !== proof.jkt) throw new TokenError('DPoP', 'invalid_token', 'the DPoP proof is not signed with the key the access token is bound to');
  // Last, so only proofs that passed everything else take a row. A proof is refused as too old after this.
  const expiresAt = new Date((proof.iat + config.dpop.proof_max_age_seconds + skew) * 1000);
  if (!(await verifier.replay.firstUse(proof.jkt, proof.jti, expiresAt)))
    throw new TokenError('DPoP', 'invalid_dpop_proof', 'the DPoP proof was already used (jti)');
  if (nonces && nonce === 'stale') reply?.header('DPoP-Nonce', nonces.current(now));
  return mapIdentity(claims, config.claims, verifier.issuer, 'DPoP', jkt);
}
