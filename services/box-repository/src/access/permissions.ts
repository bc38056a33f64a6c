// Who may change what (the seed's rules):
//   - only global admins create (and delete) organizations; organization admins update theirs and manage members;
//   - moderators manage the plain users of their organizations;
//   - any member (and a service account, in its own organization) creates boxes;
//   - a box and everything in it (versions, providers, architectures, files) is changed by its creator, or by a
//     moderator or admin of its organization, or a global admin.
// Refusals: 401 when anonymous, 403 otherwise.
import { forbidden } from '@boxyard/kit';
import { authenticationRequired } from '../auth/principal.ts';
import type { Box } from '../records.ts';
import type { Access } from './hierarchy.ts';

function refuse(access: Access, message: string): never {
  if (!access.principal) throw authenticationRequired();
  throw forbidden(message);
}

export function requireGlobalAdmin(access: Pick<Access, 'principal' | 'isGlobalAdmin'>): void {
  if (!access.isGlobalAdmin) refuse({ ...access, role: null }, 'Only administrators may do this');
}

export function requireOrganizationAdmin(access: Access, orgName: string): void {
  if (access.isGlobalAdmin || access.role === 'admin') return;
  refuse(access, `Only admins of organization '${orgName}' may do this`);
}

export function requireMember(access: Access, orgName: string): void {
  if (access.isGlobalAdmin || access.role !== null) return;
  refuse(access, `Only members of organization '${orgName}' may do this`);
}

export function isBoxCreator(access: Access, box: Box): boolean {
  const principal = access.principal;
  if (!principal) return false;
  if (principal.kind === 'service_account') return box.service_account_id === principal.id;
  return box.user_id === principal.id;
}

export function canManageBox(access: Access, box: Box): boolean {
  if (access.isGlobalAdmin || access.role === 'admin' || access.role === 'moderator') return true;
  return access.role !== null && isBoxCreator(access, box);
}

export function requireBoxManager(access: Access, box: Box, orgName: string): void {
  if (canManageBox(access, box)) return;
  refuse(access, `Only the creator of box '${orgName}/${box.name}', or a moderator or admin of '${orgName}', may change it`);
}
