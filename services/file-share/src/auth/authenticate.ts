// Turns a request's credentials into a Principal, before the body is read. Accepted, in this order:
//   Authorization: Basic <base64 user:password>   (curl -u, wget --user, URL userinfo)
//   Authorization: Bearer bfs_...                 (API key)
//   Authorization: Bearer <session JWT>           (from POST /auth/login/basic)
//   Authorization: Bearer|DPoP <provider token>    (an identity provider's access token: auth.resource_server)
//   Cookie: auth_token=<session JWT>              (set by POST /auth/login/basic for browsers)
// Credentials that are present but wrong are a 401 — except a stale cookie, which browsers keep sending: it
// counts as no credentials, so signing in again still works.
import type { Accounts, ProviderAccounts, SessionTokens } from '@boxyard/kit';
import { HttpError, InvalidTokenError } from '@boxyard/kit';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyStore } from './api-key-store.ts';
import { looksLikeApiKey } from './api-key-store.ts';
import type { FileShareConfig } from '../config.ts';
import { anonymous, asRole, CHALLENGE, keyPermissionsForRole, rolePermissions, type Permission, type Principal } from './principal.ts';

export const SESSION_COOKIE = 'auth_token';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export interface AuthenticatorDeps {
  accounts: Accounts;
  sessions: SessionTokens;
  keys: ApiKeyStore;
  publicRead: boolean;
  /** Identity-provider tokens (auth.resource_server); undefined when off. */
  provider?: ProviderAccounts | undefined;
  groupMapping?: FileShareConfig['group_mapping'];
}

/** A provider user's permissions: every permission for admins, else those its groups grant, else the default. */
export function providerPermissions(role: 'admin' | 'user', groups: readonly string[], mapping: FileShareConfig['group_mapping'] | undefined): Permission[] {
  if (role === 'admin') return [...rolePermissions.admin];
  const granted = (mapping?.permissions ?? []).filter((entry) => groups.includes(entry.group)).flatMap((entry) => entry.permissions);
  return granted.length > 0 ? [...new Set(granted)] : [...(mapping?.default_permissions ?? rolePermissions.user)];
}

const invalid = (message: string, challenge = CHALLENGE) => new HttpError(401, message, { headers: { 'www-authenticate': challenge } });

export function createAuthenticator(deps: AuthenticatorDeps) {
  return {
    authenticate: (request: FastifyRequest): Promise<Principal> => authenticate(deps, request),
    /**
     * The principal behind a long-lived stream as it stands now: today's permissions (a changed role, a key's
     * owner demoted), or null when its credential has ended (signed out, expired, key deleted, account disabled
     * or deleted). Provider callers keep the permissions their token's groups gave them.
     */
    refresh: (principal: Principal): Promise<Principal | null> => refresh(deps, principal),
    /** Whether a principal behind a long-lived stream is still allowed (key not revoked, session not ended). */
    stillValid: (principal: Principal): Promise<boolean> => stillValid(deps, principal),
  };
}

async function authenticate(deps: AuthenticatorDeps, request: FastifyRequest): Promise<Principal> {
  const header = request.headers.authorization;
  if (header) {
    const space = header.indexOf(' ');
    const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
    const value = space === -1 ? '' : header.slice(space + 1).trim();
    if (scheme === 'basic') return fromBasic(deps, value);
    if (scheme === 'dpop' && deps.provider) return fromProvider(deps, request);
    if (scheme === 'bearer' && value) {
      if (looksLikeApiKey(value)) return fromApiKey(deps, value);
      if (deps.provider?.recognizes(request)) return fromProvider(deps, request);
      const session = await fromSession(deps, value);
      if (!session) throw invalid('Invalid or expired session token', 'Bearer realm="boxyard file-share", error="invalid_token"');
      return session;
    }
    throw invalid('Unsupported Authorization scheme: use Basic or Bearer');
  }
  const cookie = request.cookies[SESSION_COOKIE];
  if (cookie) return (await fromSession(deps, cookie)) ?? anonymous(deps.publicRead);
  return anonymous(deps.publicRead);
}

async function fromSession(deps: AuthenticatorDeps, token: string): Promise<Principal | undefined> {
  let claims;
  try {
    claims = await deps.sessions.verify(token);
  } catch (error) {
    if (error instanceof InvalidTokenError) return undefined;
    throw error;
  }
  if (await deps.accounts.isSessionRevoked(claims.jti)) return undefined;
  // Our own signed session names a user id: a failing lookup is the database's failure (503), not a sign-out.
  const user = await deps.accounts.findById(claims.sub);
  if (!user) return undefined;
  const role = asRole(user.role);
  return {
    via: 'session',
    user: { id: user.id, username: user.username, role },
    permissions: new Set(rolePermissions[role]),
    scope: '/',
    session: { jti: claims.jti, expiresAt: new Date(claims.exp * 1000) },
  };
}

async function fromBasic(deps: AuthenticatorDeps, encoded: string): Promise<Principal> {
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) throw invalid('Malformed Basic credentials');
  const user = await deps.accounts.verifyCredentials(decoded.slice(0, colon), decoded.slice(colon + 1), { cached: true });
  if (!user) throw invalid('Invalid username or password');
  const role = asRole(user.role);
  return { via: 'basic', user: { id: user.id, username: user.username, role }, permissions: new Set(rolePermissions[role]), scope: '/' };
}

async function fromProvider(deps: AuthenticatorDeps, request: FastifyRequest): Promise<Principal> {
  const { identity, user } = await deps.provider!.authenticate(request);
  if (user.disabled) throw invalid('This account is disabled', 'Bearer realm="boxyard file-share", error="invalid_token"');
  const role = asRole(user.role);
  const expires = typeof identity.claims.exp === 'number' ? new Date(identity.claims.exp * 1000) : new Date(Date.now() + 3600_000);
  return {
    via: 'provider',
    user: { id: user.id, username: user.username, role },
    permissions: new Set(providerPermissions(role, identity.groups, deps.groupMapping)),
    scope: '/',
    // Long-lived streams (events) end when the token would have.
    session: { jti: `provider:${identity.claims.jti ?? identity.subject}`, expiresAt: expires },
  };
}

async function fromApiKey(deps: AuthenticatorDeps, token: string): Promise<Principal> {
  const verified = await deps.keys.verify(token);
  if ('refused' in verified) throw invalid(verified.refused, 'Bearer realm="boxyard file-share", error="invalid_token"');
  const { key, owner } = verified;
  // Checked on every use: a key never holds more than its owner's role allows today.
  const allowed = keyPermissionsForRole[owner.role];
  return {
    via: 'api-key',
    user: owner,
    permissions: new Set(key.permissions.filter((p) => allowed.includes(p))),
    scope: key.scope,
    key: { id: key.id, expiresAt: key.expires_at === null ? null : new Date(key.expires_at) },
  };
}

async function refresh(deps: AuthenticatorDeps, principal: Principal): Promise<Principal | null> {
  const now = Date.now();
  if (principal.key) {
    const current = await deps.keys.current(principal.key.id);
    if (!current) return null;
    const allowed = keyPermissionsForRole[current.owner.role];
    return {
      ...principal,
      user: current.owner,
      permissions: new Set(current.key.permissions.filter((p) => allowed.includes(p))),
      scope: current.key.scope,
      key: { id: current.key.id, expiresAt: current.key.expires_at === null ? null : new Date(current.key.expires_at) },
    };
  }
  if (principal.session) {
    if (principal.session.expiresAt.getTime() <= now) return null;
    if (await deps.accounts.isSessionRevoked(principal.session.jti)) return null;
  }
  if (!principal.user) return principal;
  const user = await deps.accounts.findById(principal.user.id);
  if (!user) return null;
  if (principal.via === 'provider') return principal;
  const role = asRole(user.role);
  return { ...principal, user: { id: user.id, username: user.username, role }, permissions: new Set(rolePermissions[role]) };
}

async function stillValid(deps: AuthenticatorDeps, principal: Principal): Promise<boolean> {
  if (principal.key) return deps.keys.isActive(principal.key.id);
  if (principal.session) {
    if (principal.session.expiresAt.getTime() <= Date.now()) return false;
    return !(await deps.accounts.isSessionRevoked(principal.session.jti));
  }
  if (principal.user) return (await deps.accounts.findById(principal.user.id)) !== null;
  return true;
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
