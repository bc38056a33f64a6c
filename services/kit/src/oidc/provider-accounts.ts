// Provider access tokens on a service's own routes: the verifier (resource-server.ts) plus the local user each
// provider identity maps to — created on first sight and found again by (issuer, subject) through the same
// identity links as browser sign-in, its role following `admin_groups`. The mapping is cached for a minute per
// (identity, groups, email), so a verified request costs no write once its user exists. A disabled user is refused
// (401 invalid_token) on every service; a deleted one is not created again (identities.ts remembers it).
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { userRow, type User } from '../accounts/accounts.ts';
import type { AuthConfig } from '../config/auth-section.ts';
import { createIdentityLinks, DeletedIdentityError } from '../oidc-sign-in/identities.ts';
import { createResourceServer, type ProviderIdentity, type ResourceServerDeps } from './resource-server.ts';

export interface ProviderCaller {
  identity: ProviderIdentity;
  user: User;
}

export interface ProviderAccounts {
  /** Whether the request's credentials are the provider's (see ResourceServer.recognizes). */
  recognizes(request: FastifyRequest): boolean;
  /** Verifies the token (refusals are HttpErrors with RFC challenges) and maps it to the local user. */
  authenticate(request: FastifyRequest, reply?: FastifyReply): Promise<ProviderCaller>;
  /** The WWW-Authenticate challenge to add to a 401 without credentials. */
  challenge(): string;
  close(): Promise<void>;
}

const CACHE_MS = 60_000;
const MAX_CACHED = 10_000;

/** Undefined when `auth.resource_server` is off: the service then never looks at provider tokens. */
export function createProviderAccounts(auth: AuthConfig, deps: ResourceServerDeps, roles = { admin: 'admin', user: 'user' }): ProviderAccounts | undefined {
  if (!auth.resource_server.enabled) return undefined;
  const server = createResourceServer(auth.resource_server, deps);
  const links = createIdentityLinks(deps.pool);
  const mapping = { ...roles, adminGroups: auth.resource_server.admin_groups };
  const cache = new Map<string, { user: User; at: number }>();

  async function userFor(identity: ProviderIdentity): Promise<User> {
    const key = createHash('sha256')
      .update(JSON.stringify([identity.issuer, identity.subject, identity.username, identity.email ?? null, [...identity.groups].sort()]))
      .digest('base64url');
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) {
      // Read again on every request (one indexed read, as for a session token): disabling or deleting the user
      // takes effect at once, not when the cache entry ages out.
      const current = await deps.pool.maybeOne(sql.type(userRow)`
        select id, username, email, role, disabled_at is not null as disabled, created_at from users where id = ${hit.user.id}::uuid`);
      if (current) return current;
      cache.delete(key);
    }
    const user = await links.signIn(
      { issuer: identity.issuer, subject: identity.subject, username: identity.username, email: identity.email, groups: identity.groups },
      mapping,
    );
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, { user, at: Date.now() });
    return user;
  }

  return {
    recognizes: (request) => server.recognizes(request),
    async authenticate(request, reply) {
      const identity = await server.verify(request, reply);
      let user: User;
      try {
        user = await userFor(identity);
      } catch (error) {
        if (error instanceof DeletedIdentityError) throw server.refuse(request, `${error.message}: the identity provider's tokens for it are refused`);
        throw error;
      }
      // The provider vouches for who the caller is, not for whether this service still lets them in.
      if (user.disabled) throw server.refuse(request, 'This account is disabled');
      return { identity, user };
    },
    challenge: () => server.challenge(),
    close: () => server.close(),
  };
}
