// What the console pages read, each in one query. The read rules are those of the API (access/hierarchy.ts):
// anonymous callers and non-members see listed boxes (public, published, in a public organization) and active
// versions; members see everything of their organizations; global admins see everything.
import { sql } from 'slonik';
import { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import {
  architectureRow,
  boxRow,
  fileRow,
  int8,
  organizationRow,
  providerRow,
  versionRow,
  type Architecture,
  type Box,
  type BoxFile,
  type Provider,
  type Version,
} from '../records.ts';

export const PAGE_SIZE = 50;

/** What a box list shows of each box (50 a page: whole rows, to_jsonb'd and validated, cost more than the rest). */
const listedBoxRow = z.object({
  b: boxRow.pick({ name: true, description: true, is_public: true, published: true }),
  org: z.string(),
  latest: z.string().nullable(),
  member: z.boolean(),
});
export type ListedBox = z.output<typeof listedBoxRow>;

/** Who the caller is, in the terms the queries need. */
function viewer(principal: Principal | null) {
  return {
    userId: principal?.kind === 'user' ? principal.id : null,
    saOrg: principal?.kind === 'service_account' ? principal.organizationId : null,
    all: principal?.kind === 'user' && principal.isAdmin,
  };
}

/** Where a page of boxes continues: after this organization and box name. */
export type BoxCursor = { org: string | null; box: string | null };

/** `org/box` as the pager writes it; undefined for anything else (names hold no `/`). */
export function parseBoxCursor(text: string): BoxCursor | undefined {
  const parts = text.split('/');
  return parts.length === 2 && parts[0] && parts[1] && text.length <= 300 ? { org: parts[0], box: parts[1] } : undefined;
}

/**
 * Boxes the caller may see, optionally in one organization, matching `search` in name or description, by
 * organization and box name: PAGE_SIZE of them after `after` (keyset: the `org/box` the previous page ended with,
 * so a deep page costs what the first does), and the cursor of the next page when there is one.
 */
export async function listBoxes(ctx: ServiceContext, principal: Principal | null, options: { search?: string; organizationId?: number; after?: BoxCursor }) {
  const { userId, saOrg, all } = viewer(principal);
  const pattern = options.search ? `%${options.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const after = options.after ?? { org: null, box: null };
  const where = sql.fragment`
    (${options.organizationId ?? null}::bigint is null or b.organization_id = ${options.organizationId ?? null}::bigint)
    and (${pattern}::text is null or b.name ilike ${pattern} or b.description ilike ${pattern} or o.name ilike ${pattern})
    and (${all} or m.role is not null or b.organization_id = ${saOrg}::bigint or (o.is_public and b.published and b.is_public))
    and (${after.org}::text is null or (lower(o.name), lower(b.name)) > (lower(${after.org}::text), lower(${after.box}::text)))
    -- Implied by the row comparison, but only this form starts the walk of organizations at the cursor's (an index
    -- condition): without it a deep page scanned every box before it (20 ms at page 101 of 10,000 boxes).
    and (${after.org}::text is null or lower(o.name) >= lower(${after.org}::text))`;
  const rows = await ctx.pool.any(sql.type(listedBoxRow)`
    select json_build_object('name', b.name, 'description', b.description, 'is_public', b.is_public, 'published', b.published) as b, o.name as org,
           (select v.version_number from versions v where v.box_id = b.id and v.status = 'active'
            order by v.version_key desc limit 1) as latest,
           coalesce(m.role is not null or b.organization_id = ${saOrg}::bigint, false) as member
    from boxes b join organizations o on o.id = b.organization_id
    left join memberships m on m.organization_id = o.id and m.user_id = ${userId}::uuid
    where ${where}
    order by lower(o.name), lower(b.name) limit ${PAGE_SIZE + 1}`);
  const boxes = rows.slice(0, PAGE_SIZE);
  const last = boxes.at(-1);
  return { boxes, next: rows.length > PAGE_SIZE && last ? `${last.org}/${last.b.name}` : undefined };
}

/** The organizations the caller belongs to (for the home page and the header). */
export async function myOrganizations(ctx: ServiceContext, principal: Principal | null) {
  const { userId, saOrg, all } = viewer(principal);
  if (!principal) return [];
  return ctx.pool.any(sql.type(z.object({ name: z.string(), role: z.string().nullable() }))`
    select o.name, coalesce(m.role, case when o.id = ${saOrg}::bigint then 'service account' end) as role
    from organizations o left join memberships m on m.organization_id = o.id and m.user_id = ${userId}::uuid
    where m.role is not null or o.id = ${saOrg}::bigint or ${all}
    order by lower(o.name)`);
}

// What the box page shows of each record, and no more: whole rows (to_jsonb of four tables, validated whole) were
// most of the page's cost in PostgreSQL and in the service (make bench ONLY==scale).
const pageProvider = providerRow.pick({ id: true, name: true, description: true });
const pageArchitecture = architectureRow.pick({ id: true, name: true, default_box: true });
const pageFile = fileRow.pick({ file_name: true, size: true, sha256: true });

export interface ArchitectureEntry {
  architecture: Pick<Architecture, 'id' | 'name' | 'default_box'>;
  file: Pick<BoxFile, 'file_name' | 'size' | 'sha256'> | null;
}
export interface ProviderEntry {
  provider: Pick<Provider, 'id' | 'name' | 'description'>;
  architectures: ArchitectureEntry[];
}
export interface VersionEntry {
  version: Version;
  providers: ProviderEntry[];
}

const treeRow = z.object({ v: versionRow, p: pageProvider.nullable(), a: pageArchitecture.nullable(), f: pageFile.nullable() });

/** Versions on one box page: a box may have thousands (its page was 1.7 MB at 1,000). */
export const VERSIONS_PER_PAGE = 25;

/**
 * One page of a box's versions (newest first) with their providers, architectures and files: those older than
 * `olderThan` (a version number; keyset, so a deep page costs what the first does), and the version to continue
 * from when there are more.
 */
export async function versionTree(
  ctx: ServiceContext,
  box: Box,
  member: boolean,
  olderThan?: string,
): Promise<{ versions: VersionEntry[]; next: string | undefined }> {
  const rows = await ctx.pool.any(sql.type(treeRow)`
    with page as (
      select v.id, v.version_key from versions v
      where v.box_id = ${box.id} and (${member} or v.status = 'active')
        and (${olderThan ?? null}::text is null or v.version_key < rubygems_version_key(${olderThan ?? null}::text))
      order by v.version_key desc limit ${VERSIONS_PER_PAGE + 1})
    select json_build_object('id', v.id, 'box_id', v.box_id, 'version_number', v.version_number, 'description', v.description, 'status', v.status,
                             'created_at', v.created_at, 'updated_at', v.updated_at) as v,
           case when p.id is not null then json_build_object('id', p.id, 'name', p.name, 'description', p.description) end as p,
           case when a.id is not null then json_build_object('id', a.id, 'name', a.name, 'default_box', a.default_box) end as a,
           case when f.id is not null then json_build_object('file_name', f.file_name, 'size', f.size, 'sha256', f.sha256) end as f
    from page join versions v on v.id = page.id
    left join providers p on p.version_id = v.id
    left join architectures a on a.provider_id = p.id
    left join files f on f.architecture_id = a.id
    order by page.version_key desc, lower(p.name), a.default_box desc, lower(a.name)`);
  const versions: VersionEntry[] = [];
  for (const row of rows) {
    let version = versions.at(-1);
    if (version?.version.id !== row.v.id) versions.push((version = { version: row.v, providers: [] }));
    if (!row.p) continue;
    let provider = version.providers.at(-1);
    if (provider?.provider.id !== row.p.id) version.providers.push((provider = { provider: row.p, architectures: [] }));
    if (row.a) provider.architectures.push({ architecture: row.a, file: row.f });
  }
  const more = versions.length > VERSIONS_PER_PAGE;
  const shown = versions.slice(0, VERSIONS_PER_PAGE);
  return { versions: shown, next: more ? shown.at(-1)!.version.version_number : undefined };
}

const memberRow = z.object({ username: z.string(), email: z.string().nullable(), role: z.string() });
export const membersOf = (ctx: ServiceContext, organizationId: number) =>
  ctx.pool.any(sql.type(memberRow)`
    select u.username, u.email, m.role from memberships m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId} order by lower(u.username)`);

const serviceAccountRow = z.object({
  id: int8,
  username: z.string(),
  description: z.string(),
  role: z.string(),
  owner: z.string().nullable(),
  expires_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});
export const serviceAccountsOf = (ctx: ServiceContext, organizationId: number) =>
  ctx.pool.any(sql.type(serviceAccountRow)`
    select s.id, s.username, s.description, s.role, u.username as owner,
           to_jsonb(s.expires_at) #>> '{}' as expires_at, to_jsonb(s.last_used_at) #>> '{}' as last_used_at
    from service_accounts s left join users u on u.id = s.user_id
    where s.organization_id = ${organizationId} order by s.id`);

const userRow = z.object({ username: z.string(), email: z.string().nullable(), role: z.string(), created_at: z.string(), organizations: z.string() });
export const allUsers = (ctx: ServiceContext) =>
  ctx.pool.any(sql.type(userRow)`
    select u.username, u.email, u.role, to_jsonb(u.created_at) #>> '{}' as created_at,
           coalesce((select string_agg(o.name || ' (' || m.role || ')', ', ' order by lower(o.name))
                     from memberships m join organizations o on o.id = m.organization_id where m.user_id = u.id), '') as organizations
    from users u order by lower(u.username) limit 1000`);

export const organizationByName = (ctx: ServiceContext, name: string) =>
  ctx.pool.maybeOne(sql.type(z.object({ o: organizationRow }))`select to_jsonb(o) as o from organizations o where lower(o.name) = lower(${name})`);

const webhookRow = z.object({ id: int8, url: z.string(), events: z.array(z.string()), description: z.string(), created_at: z.string() });
export const allWebhooks = (ctx: ServiceContext) =>
  ctx.pool.any(sql.type(webhookRow)`select id, url, events, description, to_jsonb(created_at) #>> '{}' as created_at from webhooks order by id limit 200`);

const deliveryRow = z.object({
  id: z.string(),
  webhook_id: int8,
  event: z.string(),
  status: z.string(),
  attempts: z.number(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});
/** The latest deliveries of each webhook (the delivery log; the API pages through all of them). */
export const latestDeliveries = (ctx: ServiceContext, perWebhook: number) =>
  ctx.pool.any(sql.type(deliveryRow)`
    select id, webhook_id, event, status, attempts, last_status_code, last_error, created_at, finished_at from (
      select d.id::text as id, d.webhook_id, e.type as event, d.status, d.attempts, d.last_status_code, d.last_error,
             to_jsonb(d.created_at) #>> '{}' as created_at, to_jsonb(d.finished_at) #>> '{}' as finished_at,
             row_number() over (partition by d.webhook_id order by d.id desc) as n
      from webhook_deliveries d join events e on e.id = d.event_id) ranked
    where n <= ${perWebhook} order by webhook_id, id desc`);
