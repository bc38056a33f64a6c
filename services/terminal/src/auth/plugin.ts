// Who is calling: the session JWT in the `auth_token` cookie (HttpOnly, Secure, SameSite=Strict), checked for
// signature, issuer, audience, type, expiry and revocation, and its user looked up (so a deleted user or a
// changed role takes effect at once); or, for programs, an identity provider's access token (`Authorization:
// Bearer|DPoP`, auth.resource_server) — on REST and on the WebSocket upgrade alike. Routes that need a caller add the `requireUser` / `requireAdmin`
// preHandlers, which set `request.user`; nothing is looked up for static files or health probes.
import cookie from '@fastify/cookie';
import { forbidden, InvalidTokenError, setAccessPrincipal, unauthorized, type Accounts, type ProviderAccounts, type SessionTokens } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const AUTH_COOKIE = 'auth_token';
export const ROLES = ['admin', 'user'] as const;
export type Role = (typeof ROLES)[number];

export interface AuthenticatedUser {
  id: string;
  username: string;
  role: string;
  /** The session token's id and expiry, for sign-out. */
  jti: string;
  expiresAt: Date;
  /** How the credential came: the session JWT in the `auth_token` cookie, or a provider token in `Authorization`. */
  presentedIn: 'cookie' | 'authorization';
}

declare module 'fastify' {
  interface FastifyRequest {
    user: AuthenticatedUser | null;
  }
}

export interface AuthOptions {
  accounts: Accounts;
  tokens: SessionTokens;
  ttlSeconds: number;
  /** Identity-provider tokens (auth.resource_server); undefined when off. */
  provider?: ProviderAccounts | undefined;
}

export const cookieOptions = (maxAgeSeconds: number) => ({ httpOnly: true, secure: true, sameSite: 'strict', path: '/', maxAge: maxAgeSeconds }) as const;

const SIGN_IN_HINT = 'Authentication required: sign in with POST /auth/login/basic';

export function createAuth(options: AuthOptions) {
  const fromProvider = async (request: FastifyRequest): Promise<AuthenticatedUser | null> => {
    const { identity, user } = await options.provider!.authenticate(request);
    if (user.disabled) return null;
    const exp = typeof identity.claims.exp === 'number' ? identity.claims.exp * 1000 : Date.now() + 3600_000;
    // Signing out with a provider token revokes that token here until it expires.
    return {
      id: user.id,
      username: user.username,
      role: user.role,
      jti: `provider:${identity.claims.jti ?? identity.subject}`,
      expiresAt: new Date(exp),
      presentedIn: 'authorization',
    };
  };

  const resolveUser = async (request: FastifyRequest): Promise<AuthenticatedUser | null> => {
    if (options.provider && request.headers.authorization && (/^dpop /i.test(request.headers.authorization) || options.provider.recognizes(request))) {
      const user = await fromProvider(request);
      return !user || (await options.accounts.isSessionRevoked(user.jti)) ? null : user;
    }
    const token = request.cookies[AUTH_COOKIE];
    if (!token) return null;
    try {
      const claims = await options.tokens.verify(token);
      // Both at once (one database round trip of wait instead of two: every start and attach pays it).
      // Only an active account: a disabled or deleted one has no session any more.
      const [revoked, user] = await Promise.all([options.accounts.isSessionRevoked(claims.jti), options.accounts.findById(claims.sub)]);
      if (revoked || !user) return null;
      return { id: user.id, username: user.username, role: user.role, jti: claims.jti, expiresAt: new Date(claims.exp * 1000), presentedIn: 'cookie' };
    } catch (error) {
      if (error instanceof InvalidTokenError) return null;
      throw error;
    }
  };

  /** Sets request.user, and names the caller on the request's access-log line. */
  const identify = async (request: FastifyRequest): Promise<AuthenticatedUser | null> => {
    request.user = await resolveUser(request);
    setAccessPrincipal(request, request.user?.username ?? null);
    return request.user;
  };

  return {
    options,
    resolveUser,

    /** preHandler: sets request.user when the cookie holds a valid session, never refuses. */
    optionalUser: async (request: FastifyRequest) => {
      await identify(request);
    },

    requireUser: async (request: FastifyRequest) => {
      if (!(await identify(request))) throw unauthorized(SIGN_IN_HINT);
    },

    requireAdmin: async (request: FastifyRequest) => {
      await identify(request);
      if (!request.user) throw unauthorized(SIGN_IN_HINT);
      if (request.user.role !== 'admin') throw forbidden('Insufficient permissions: admins only');
    },

    async signIn(reply: FastifyReply, user: { id: string; username: string; role: string }) {
      const issued = await options.tokens.sign(user.id, { username: user.username, role: user.role }, options.ttlSeconds);
      reply.setCookie(AUTH_COOKIE, issued.token, cookieOptions(options.ttlSeconds));
      return issued;
    },

    signOut(reply: FastifyReply) {
      reply.clearCookie(AUTH_COOKIE, { ...cookieOptions(0), maxAge: undefined });
    },
  };
}

export type Auth = ReturnType<typeof createAuth>;

/** Installs on the root instance (not encapsulated): every route can read cookies and `request.user`. */
export async function installAuth(app: FastifyInstance): Promise<void> {
  await app.register(cookie);
  app.decorateRequest('user', null);
}
