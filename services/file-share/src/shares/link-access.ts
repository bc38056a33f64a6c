// What a link may do now. A link delegates one permission of its creator — a share link `downloads` on its file or
// folder, a file request `uploads` into its folder — and never more than the creator holds at the time of use: the
// creator's account (deleted or disabled: nothing), its role today and, for a link made with an API key, that key's
// permissions and folder scope today. Revoked, expired and used-up links answer 410; a link whose creator lost the
// permission answers 410 too, with nothing said about why beyond "no longer valid".
import { HttpError } from '@boxyard/kit';
import { asRole, keyPermissionsForRole, rolePermissions, type Permission, type Principal } from '../auth/principal.ts';
import { isWithin } from '../paths/share-path.ts';
import type { LinkWithCreator, ShareKind } from './share-store.ts';

export const delegated: Record<ShareKind, Permission> = { share: 'downloads', request: 'uploads' };

export type LinkState = 'active' | 'revoked' | 'expired' | 'exhausted' | 'creator-lost';

/** The creator's permissions and scope as of now, or null when the account (or the key used) is gone. */
export function creatorPower(link: LinkWithCreator, now = Date.now()): { permissions: ReadonlySet<Permission>; scope: string } | null {
  if (link.creator_role === null) return null;
  const role = asRole(link.creator_role);
  if (link.created_by_key === null) return { permissions: new Set(rolePermissions[role]), scope: '/' };
  if (link.key_permissions === null || link.key_scope === null) return null;
  if (link.key_expires_at !== null && link.key_expires_at <= now) return null;
  const allowed = keyPermissionsForRole[role];
  return { permissions: new Set(link.key_permissions.filter((permission) => allowed.includes(permission))), scope: link.key_scope };
}

/**
 * `holdsUse`: the request continues something that already took one of the link's uses (a resumable upload through
 * a file request reserves its use at creation), so a link used up since is still good for it.
 */
export function linkState(link: LinkWithCreator, now = Date.now(), holdsUse = false): LinkState {
  if (link.revoked_at !== null) return 'revoked';
  if (link.expires_at <= now) return 'expired';
  if (!holdsUse && link.max_uses !== null && link.uses >= link.max_uses) return 'exhausted';
  const power = creatorPower(link, now);
  if (!power || !power.permissions.has(delegated[link.kind]) || !isWithin(link.path, power.scope)) return 'creator-lost';
  return 'active';
}

const GONE: Record<Exclude<LinkState, 'active'>, string> = {
  revoked: 'This link has been revoked',
  expired: 'This link has expired',
  exhausted: 'This link has been used as many times as it allows',
  'creator-lost': 'This link is no longer valid',
};

export const gone = (state: Exclude<LinkState, 'active'>) => new HttpError(410, GONE[state]);

/** Throws 410 unless the link may be used now. */
export function requireActive(link: LinkWithCreator, holdsUse = false): void {
  const state = linkState(link, Date.now(), holdsUse);
  if (state !== 'active') throw gone(state);
}

/**
 * The caller behind a link, for the share's own upload code: only the delegated permission, only inside the link's
 * entry, never `delete` (so nothing is replaced), and no user (what it stores is marked as nobody's).
 */
export function linkPrincipal(link: LinkWithCreator): Principal {
  return { via: 'share-link', user: null, permissions: new Set([delegated[link.kind]]), scope: link.path };
}
