// Who is calling. Credentials are read in the seed's order: the session JWT in `x-access-token`, then the
// `Authorization` header (Bearer: a session JWT, then an identity provider's access token, then a raw
// service-account key — told apart by their form; DPoP: a provider token with its proof; Basic: a user's
// password or a service-account key as the password, which is how `user:key@host` URLs reach us), then `?access_token=`
// (Vagrant with VAGRANT_SERVER_ACCESS_TOKEN_BY_URL), then the web console's session cookie. Credentials that are
// present but wrong are refused with 401 even on public routes: a client should learn that its token is bad, not
// silently get less — except a stale console cookie, which browsers keep sending: it counts as no credentials, so
// the pages still show and signing in again works.
import { createOriginPolicy, HttpError, ignoreError, InvalidTokenError, type OriginPolicy, SAFE_METHODS, setAccessPrincipal, unauthorized } from '@boxyard/kit';
import type { FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { ServiceContext } from '../context.ts';
import { int8 } from '../records.ts';
import { keyIdOf, keyMatches, looksLikeServiceAccountKey } from './service-account-keys.ts';
import { sessionCookieOf } from './session-cookie.ts';

export type MemberRole = 'admin' | 'moderator' | 'user';

export interface UserPrincipal {
  kind: 'user';
  id: string;
  username: string;
  email: string | null;
  isAdmin: boolean;
  createdAt: Date;
  session?: Session;
}

/** The session a session token belongs to: `family` groups the tokens of one sign-in (refresh, sign-out). */
export interface Session {
  jti: string;
  expiresAt: Date;
  stayLoggedIn: boolean;
  family: string | undefined;
}

export interface ServiceAccountPrincipal {
  kind: 'service_account';
  id: number;
  username: string;
  ownerId: string;
  organizationId: number;
  role: Exclude<MemberRole, 'admin'>;
  session?: Session;
}

export type Principal = UserPrincipal | ServiceAccountPrincipal;

export const SESSION_TYP = 'boxyard-box-session+jwt';
const REALM = 'Bearer realm="boxyard-box-repository"';

export const authenticationRequired = (
  message = 'Authentication required: send a session token (x-access-token) or a service-account key (Authorization: Bearer)',
) => unauthorized(message, { 'www-authenticate': REALM });
export const invalidCredentials = (message: string) => unauthorized(message, { 'www-authenticate': `${REALM}, error="invalid_token"` });

const serviceAccountRow = z.object({
  id: int8,
  username: z.string(),
  key_sha256: z.string(),
  user_id: z.string(),
  organization_id: int8,
  role: z.enum(['moderator', 'user']),
  kind: z.enum(['key', 'client']),
  expired: z.boolean(),
  stale: z.boolean(),
  creator_authorized: z.boolean(),
});

// A service account works only while its creator could still make it: an enabled user who is a global admin or
// an admin of the account's organization. Removing, demoting, disabling or deleting the creator stops it at once.
const serviceAccountColumns = sql.fragment`
  s.id, s.username, s.key_sha256, s.user_id, s.organization_id, s.role, s.kind,
  coalesce(s.expires_at <= now(), false) as expired,
  coalesce(s.last_used_at < now() - interval '1 minute', true) as stale,
  exists (select 1 from users u where u.id = s.user_id and u.disabled_at is null
            and (u.role = 'admin' or exists (select 1 from memberships m where m.user_id = u.id and m.organization_id = s.organization_id and m.role = 'admin')))
    as creator_authorized`;

function usableServiceAccount(row: z.output<typeof serviceAccountRow> | null, what: string): z.output<typeof serviceAccountRow> {
  if (!row) throw invalidCredentials(`${what} is not valid`);
  if (row.expired) throw invalidCredentials(`${what} expired`);
  if (!row.creator_authorized) throw invalidCredentials(`${what} no longer works: its creator lost the authority it was created with`);
  return row;
}

const resolved = new WeakMap<FastifyRequest, Promise<Principal | null>>();

/** The caller, or null for an anonymous request; throws 401 for credentials that don't verify. Memoised per request. */
export function principalOf(ctx: ServiceContext, request: FastifyRequest): Promise<Principal | null> {
  let found = resolved.get(request);
  if (!found) {
    found = resolve(ctx, request).then((principal) => {
      // The access log's caller: the user's or the service account's username.
      setAccessPrincipal(request, principal?.username ?? null);
      return principal;
    });
    resolved.set(request, found);
  }
  return found;
}

/** The caller; 401 when anonymous (also naming the provider's schemes when provider tokens are accepted). */
export async function requirePrincipal(ctx: ServiceContext, request: FastifyRequest): Promise<Principal> {
  const principal = await principalOf(ctx, request);
  if (!principal) {
    const required = authenticationRequired();
    if (ctx.provider) required.headers['www-authenticate'] = `${REALM}, ${ctx.provider.challenge()}`;
    throw required;
  }
  return principal;
}

async function resolve(ctx: ServiceContext, request: FastifyRequest): Promise<Principal | null> {
  const sessionHeader = request.headers['x-access-token'];
  if (typeof sessionHeader === 'string' && sessionHeader !== '') return fromSessionToken(ctx, sessionHeader);
  const authorization = request.headers.authorization;
  if (authorization) {
    const [scheme = '', ...rest] = authorization.trim().split(/\s+/);
    const value = rest.join(' ');
    if (/^bearer$/i.test(scheme) && value) return fromBearer(ctx, value, request);
    if (/^dpop$/i.test(scheme) && ctx.provider) return fromProvider(ctx, request);
    if (/^basic$/i.test(scheme) && value) return fromBasic(ctx, value);
    throw invalidCredentials('Unsupported Authorization header: use Bearer <token> or Basic credentials');
  }
  const accessToken = (request.query as Record<string, unknown> | undefined)?.access_token;
  if (typeof accessToken === 'string' && accessToken !== '') return fromBearer(ctx, accessToken);
  const cookie = sessionCookieOf(request);
  if (cookie) return fromSessionCookie(ctx, request, cookie);
  return null;
}

const originPolicies = new WeakMap<ServiceContext, OriginPolicy>();

/** The console's cookie: a browser sends it by itself, so a change it authorises must come from our own pages. */
async function fromSessionCookie(ctx: ServiceContext, request: FastifyRequest, token: string): Promise<Principal | null> {
  let principal: Principal;
  try {
    principal = await fromSessionToken(ctx, token);
  } catch (error) {
    if (error instanceof HttpError && error.statusCode === 401) return null;
    throw error;
  }
  if (!SAFE_METHODS.has(request.method)) {
    let policy = originPolicies.get(ctx);
    if (!policy) originPolicies.set(ctx, (policy = createOriginPolicy({ publicUrl: ctx.config.server.public_url })));
    await policy.check(request);
  }
  return principal;
}

/** A service-account key has its own prefix; a provider token names the provider as its issuer; else a session. */
function fromBearer(ctx: ServiceContext, token: string, request?: FastifyRequest): Promise<Principal> {
  if (looksLikeServiceAccountKey(token)) return fromServiceAccountKey(ctx, token);
  if (request && ctx.provider?.recognizes(request)) return fromProvider(ctx, request);
  return fromSessionToken(ctx, token);
}

/** An identity provider's access token: its user (created on first sight) and the memberships its groups grant. */
async function fromProvider(ctx: ServiceContext, request: FastifyRequest): Promise<Principal> {
  const { identity, user } = await ctx.provider!.authenticate(request);
  await ctx.groupMemberships.apply(user.id, identity.groups);
  return { kind: 'user', id: user.id, username: user.username, email: user.email, isAdmin: user.role === 'admin', createdAt: user.created_at };
}

async function fromBasic(ctx: ServiceContext, encoded: string): Promise<Principal> {
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidCredentials('Malformed Basic credentials');
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  // The key identifies its account by itself, so the user part is not checked (as with GitHub tokens).
  if (looksLikeServiceAccountKey(password)) return fromServiceAccountKey(ctx, password);
  const user = await ctx.accounts.verifyCredentials(username, password, { cached: true });
  if (!user) throw invalidCredentials('Invalid username or password');
  return { kind: 'user', id: user.id, username: user.username, email: user.email, isAdmin: user.role === 'admin', createdAt: user.created_at };
}

export async function fromServiceAccountKey(ctx: ServiceContext, key: string): Promise<ServiceAccountPrincipal> {
  const keyId = keyIdOf(key);
  const found = keyId
    ? await ctx.pool.maybeOne(sql.type(serviceAccountRow)`select ${serviceAccountColumns} from service_accounts s where s.key_id = ${keyId}`)
    : null;
  if (!found || !keyMatches(key, found.key_sha256)) throw invalidCredentials('Invalid service-account key');
  // Client credentials (variant B) are exchanged for a short-lived token, never sent with every request.
  if (found.kind === 'client') throw invalidCredentials('This is a client secret: exchange it for an access token at POST /api/auth/service-account');
  const row = usableServiceAccount(found, 'Service-account key');
  // At most one write a minute per account: "last used" without a write per request.
  if (row.stale)
    void ctx.pool
      .query(sql.unsafe`update service_accounts set last_used_at = now() where id = ${row.id}`)
      .catch(ignoreError('last-used is a hint, written at most once a minute'));
  return { kind: 'service_account', id: row.id, username: row.username, ownerId: row.user_id, organizationId: row.organization_id, role: row.role };
}

async function fromSessionToken(ctx: ServiceContext, token: string): Promise<Principal> {
  let claims;
  try {
    claims = await ctx.tokens.verify(token);
  } catch (error) {
    if (error instanceof InvalidTokenError) throw invalidCredentials(error.expired ? 'Session token expired' : 'Invalid session token');
    throw error;
  }
  if (await ctx.accounts.isSessionRevoked(claims.jti)) throw invalidCredentials('Session token revoked (signed out)');
  const session: Session = {
    jti: claims.jti,
    expiresAt: new Date(claims.exp * 1000),
    stayLoggedIn: claims.stay === true,
    family: typeof claims.sid === 'string' ? claims.sid : undefined,
  };
  return principalOfSubject(ctx, claims.sub, session);
}

/** Who a session's subject is now (`<user id>` or `sa:<service account id>`); 401 when it may no longer act. */
export async function principalOfSubject(ctx: ServiceContext, subject: string, session?: Session): Promise<Principal> {
  if (subject.startsWith('sa:')) {
    const found = await ctx.pool.maybeOne(
      sql.type(serviceAccountRow)`select ${serviceAccountColumns} from service_accounts s where s.id = ${Number(subject.slice(3)) || 0}`,
    );
    const row = usableServiceAccount(found, 'The service account of this session');
    return {
      kind: 'service_account',
      id: row.id,
      username: row.username,
      ownerId: row.user_id,
      organizationId: row.organization_id,
      role: row.role,
      ...(session ? { session } : {}),
    };
  }
  const user = await ctx.accounts.findById(subject);
  if (!user) throw invalidCredentials('The user of this session no longer exists or is disabled');
  return {
    kind: 'user',
    id: user.id,
    username: user.username,
    email: user.email,
    isAdmin: user.role === 'admin',
    createdAt: user.created_at,
    ...(session ? { session } : {}),
  };
}
