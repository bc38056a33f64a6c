// Finds an item by its path (org > box > version > provider > architecture > file) in one query, answers 404 for
// the first level that does not exist, and applies the read rule on the way down:
//   - a public organization is readable by anyone, a private one by its members only;
//   - a box is readable by members, and by anyone when it is published and public (or has guest access, which
//     makes a private box downloadable by URL for anyone without listing it), in a public organization;
//   - non-members see only `active` versions; `unreleased` and `revoked` ones are members-only (404 otherwise).
// Global admins read everything. A caller who may not read a thing hears the same as for a thing that does not
// exist, on read and write routes alike, so private names cannot be probed: 401 when anonymous (sending
// credentials may help), 404 when signed in — named as the caller spelled it, never as stored.
import { notFound } from '@boxyard/kit';
import type { FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { authenticationRequired, principalOf, type MemberRole, type Principal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import {
  architectureRow,
  boxRow,
  fileRow,
  organizationRow,
  providerRow,
  versionRow,
  type Architecture,
  type Box,
  type BoxFile,
  type Organization,
  type Provider,
  type Version,
} from '../records.ts';

export interface PathParams {
  org: string;
  box?: string;
  version?: string;
  provider?: string;
  arch?: string;
}

export interface Access {
  principal: Principal | null;
  /** The caller's role in the organization (a service account's in its own organization only). */
  role: MemberRole | null;
  isGlobalAdmin: boolean;
}

export interface Found extends Access {
  org: Organization;
  box: Box | undefined;
  version: Version | undefined;
  provider: Provider | undefined;
  architecture: Architecture | undefined;
  file: BoxFile | undefined;
  /**
   * The box's metadata_version, moved by every change of its versions, providers, architectures and files
   * (migrations 0006, 0012): what a cache of something built from its tree is checked against.
   */
  treeVersion: string | undefined;
}

const chainRow = z.object({
  org: organizationRow,
  member_role: z.enum(['admin', 'moderator', 'user']).nullable(),
  box: boxRow.nullable(),
  version: versionRow.nullable(),
  provider: providerRow.nullable(),
  architecture: architectureRow.nullable(),
  file: fileRow.nullable(),
  tree_version: z.string().nullable(),
});

export const isMember = (access: Access): boolean => access.role !== null || access.isGlobalAdmin;

export function roleIn(principal: Principal | null, organizationId: number, memberRole: MemberRole | null): MemberRole | null {
  if (!principal) return null;
  if (principal.kind === 'service_account') return principal.organizationId === organizationId ? principal.role : null;
  return memberRole;
}

/** The answer for a thing the caller may not read — or that does not exist: the two are told apart by no one. */
export function hidden(access: Pick<Access, 'principal'>, what: string): never {
  if (!access.principal) throw authenticationRequired(`Authentication required: ${what} does not exist or is not public`);
  throw notFound(`${what} not found`);
}

export const canReadOrganization = (org: Organization, access: Access): boolean => org.is_public || isMember(access);
export const isBoxListed = (org: Organization, box: Box): boolean => org.is_public && box.published && box.is_public;
export const canReadBox = (org: Organization, box: Box, access: Access): boolean =>
  isMember(access) || (org.is_public && box.published && (box.is_public || box.guest_access));
export const canSeeVersion = (version: Version, access: Access): boolean => isMember(access) || version.status === 'active';

/**
 * Looks the path up and applies the read rules; `params` decides how deep. Write routes use it too: who may not
 * read a thing may not learn that it exists by trying to change it. `checkRead: false` only for a lookup whose
 * result is used after another proof (a signed download link), never to answer the caller.
 */
export async function findPath(ctx: ServiceContext, request: FastifyRequest, params: PathParams, options: { checkRead?: boolean } = {}): Promise<Found> {
  const principal = await principalOf(ctx, request);
  const userId = principal?.kind === 'user' ? principal.id : null;
  const row = await ctx.pool.maybeOne(sql.type(chainRow)`
    select to_jsonb(o) as org,
           (select m.role from memberships m where m.organization_id = o.id and m.user_id = ${userId}::uuid) as member_role,
           to_jsonb(b) as box, to_jsonb(v) as version, to_jsonb(p) as provider, to_jsonb(a) as architecture, to_jsonb(f) as file,
           b.metadata_version::text as tree_version
    from organizations o
    left join boxes b on b.organization_id = o.id and lower(b.name) = lower(${params.box ?? null})
    left join versions v on v.box_id = b.id and v.version_number = ${params.version ?? null}
    left join providers p on p.version_id = v.id and lower(p.name) = lower(${params.provider ?? null})
    left join architectures a on a.provider_id = p.id and lower(a.name) = lower(${params.arch ?? null})
    left join files f on f.architecture_id = a.id
    where lower(o.name) = lower(${params.org})`);
  const checkRead = options.checkRead ?? true;
  const orgName = `Organization '${params.org}'`;
  if (!row) {
    if (checkRead) hidden({ principal }, orgName);
    throw notFound(`${orgName} not found`);
  }
  const access: Access = { principal, role: roleIn(principal, row.org.id, row.member_role), isGlobalAdmin: principal?.kind === 'user' && principal.isAdmin };
  if (checkRead && !canReadOrganization(row.org, access)) hidden(access, orgName);
  const found: Found = {
    ...access,
    org: row.org,
    box: undefined,
    version: undefined,
    provider: undefined,
    architecture: undefined,
    file: undefined,
    treeVersion: undefined,
  };
  if (params.box === undefined) return found;
  const boxName = `Box '${params.org}/${params.box}'`;
  if (checkRead && (!row.box || !canReadBox(row.org, row.box, access))) hidden(access, boxName);
  if (!row.box) throw notFound(`${boxName} not found`);
  found.box = row.box;
  found.treeVersion = row.tree_version ?? undefined;
  if (params.version === undefined) return found;
  if (!row.version || (checkRead && !canSeeVersion(row.version, access)))
    throw notFound(`Version '${params.version}' of box '${row.org.name}/${row.box.name}' not found`);
  found.version = row.version;
  if (params.provider === undefined) return found;
  if (!row.provider) throw notFound(`Provider '${params.provider}' of version ${row.version.version_number} not found`);
  found.provider = row.provider;
  if (params.arch === undefined) return found;
  if (!row.architecture) throw notFound(`Architecture '${params.arch}' of provider '${row.provider.name}' not found`);
  found.architecture = row.architecture;
  found.file = row.file ?? undefined;
  return found;
}

export const requireFound = <T>(value: T | undefined): T => {
  if (value === undefined) throw new Error('path level not loaded');
  return value;
};
