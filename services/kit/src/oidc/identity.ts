// Verified claims → who the caller is, through the configured claim names (`auth.resource_server.claims`).
import type { JWTPayload } from 'jose';
import type { ResourceServerConfig } from '../config/auth-section.ts';
import { TokenError, type Scheme } from './errors.ts';

export interface ProviderIdentity {
  issuer: string;
  subject: string;
  /** The configured username claim, else `sub`. */
  username: string;
  email?: string;
  groups: string[];
  /** `scope` (space-separated, RFC 9068 §2.2.3) or `scp` (an array, some providers). */
  scopes: string[];
  clientId?: string;
  claims: JWTPayload;
  /** `cnf.jkt`: the DPoP key the token is bound to (and the request was proven with). */
  boundTo?: string;
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

export function mapIdentity(claims: JWTPayload, mapping: ResourceServerConfig['claims'], issuer: string, scheme: Scheme, boundTo?: string): ProviderIdentity {
  // An introspection answer may omit `sub` for a client acting for itself; RFC 9068 §2.2 makes it the client id.
  const subject = nonEmpty(claims.sub) ? claims.sub : nonEmpty(claims.client_id) ? claims.client_id : undefined;
  if (!subject) throw new TokenError(scheme, 'invalid_token', 'the access token names no subject');
  const username = claims[mapping.username];
  const email = claims[mapping.email];
  const groups = claims[mapping.groups];
  const scopes = nonEmpty(claims.scope) ? claims.scope.split(' ').filter(Boolean) : Array.isArray(claims.scp) ? claims.scp.filter(nonEmpty) : [];
  return {
    issuer,
    subject,
    username: nonEmpty(username) ? username : subject,
    ...(nonEmpty(email) ? { email } : {}),
    groups: Array.isArray(groups) ? groups.filter(nonEmpty) : nonEmpty(groups) ? [groups] : [],
    scopes,
    ...(nonEmpty(claims.client_id) ? { clientId: claims.client_id } : {}),
    claims,
    ...(boundTo ? { boundTo } : {}),
  };
}
