// Provider access tokens on a service's own routes: the verifier (resource-server.ts) plus the local user each
// provider identity maps to — created on first sight and found again by (issuer, subject) through the same
// identity links as browser sign-in, its role following `admin_groups`. The mapping is cached for a minute per
// (identity, groups, email), so a verified request costs no write once its user exists.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../accounts/accounts.ts';
import type { AuthConfig } from '../config/auth-section.ts';
import { createIdentityLinks } from '../oidc-sign-in/identities.ts';
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
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.user;
    const user = await links.signIn({ issuer: identity.issuer, subject: identity.subject, username: identity.username, email: identity.email, groups: identity.groups }, mapping);
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, { user, at: Date.now() });
    return user;
  }

  return {
    recognizes: (request) => server.recognizes(request),
    async authenticate(request, reply) {
      const identity = await server.verify(request, reply);
      return { identity, user: await userFor(identity) };
    },
    challenge: () => server.challenge(),
    close: () => server.close(),
  };
}
