// Who is calling and what they may do. Roles give users their permissions; an API key holds at most what its
// owner's role allows for keys, within a folder scope; anonymous callers read only when `public_read` is on.
//
//   role    file permissions               API keys it may create               other
//   admin   downloads, uploads, delete     any of downloads, uploads, delete    manages users and every key
//   user    downloads, uploads             downloads only (the seed's rule)     manages its own keys
import { HttpError } from '@boxyard/kit';
import { isWithin } from '../paths/share-path.ts';

export const PERMISSIONS = ['downloads', 'uploads', 'delete'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLES = ['admin', 'user'] as const;
export type Role = (typeof ROLES)[number];

export const rolePermissions: Record<Role, readonly Permission[]> = {
  admin: ['downloads', 'uploads', 'delete'],
  user: ['downloads', 'uploads'],
};

/** What a user of each role may put into an API key. */
export const keyPermissionsForRole: Record<Role, readonly Permission[]> = {
  admin: ['downloads', 'uploads', 'delete'],
  user: ['downloads'],
};

export const asRole = (role: string): Role => ((ROLES as readonly string[]).includes(role) ? (role as Role) : 'user');

export interface PrincipalUser {
  id: string;
  username: string;
  role: Role;
}

export interface Principal {
  /** `share-link`: an outsider through a share link or file request (shares/link-access.ts). */
  via: 'session' | 'basic' | 'api-key' | 'provider' | 'anonymous' | 'share-link';
  user: PrincipalUser | null;
  permissions: ReadonlySet<Permission>;
  /** The folder the principal is limited to (`/` = the whole share). */
  scope: string;
  key?: { id: string; expiresAt: Date | null };
  session?: { jti: string; expiresAt: Date };
}

export const anonymous = (publicRead: boolean): Principal => ({
  via: 'anonymous',
  user: null,
  permissions: new Set(publicRead ? (['downloads'] as const) : []),
  scope: '/',
});

export const CHALLENGE = 'Basic realm="boxyard file-share", charset="UTF-8", Bearer realm="boxyard file-share"';

/** 401 with a challenge when nobody signed in; 403 when someone did but lacks the right. */
export function refuse(principal: Principal, message: string): HttpError {
  if (principal.via === 'anonymous') return new HttpError(401, 'Authentication required', { headers: { 'www-authenticate': CHALLENGE } });
  return new HttpError(403, message);
}

/** Throws unless the principal holds `permission` for `path` (inside its scope). */
export function requirePermission(principal: Principal, permission: Permission, path: string): void {
  if (!principal.permissions.has(permission)) throw refuse(principal, `Insufficient permissions: ${permission} is required`);
  if (!isWithin(path, principal.scope)) throw refuse(principal, `Insufficient permissions: this key is limited to ${principal.scope}`);
}

/** Throws unless the caller signed in as a user (session or Basic), not with a key. */
export function requireUser(principal: Principal): PrincipalUser {
  if (!principal.user || principal.via === 'anonymous') throw refuse(principal, 'Insufficient permissions');
  return principal.user;
}

export function requireAdmin(principal: Principal): PrincipalUser {
  const user = requireUser(principal);
  if (principal.via === 'api-key' || user.role !== 'admin') throw refuse(principal, 'Insufficient permissions: administrators only');
  return user;
}

export const mayRead = (principal: Principal, path: string): boolean => principal.permissions.has('downloads') && isWithin(path, principal.scope);
