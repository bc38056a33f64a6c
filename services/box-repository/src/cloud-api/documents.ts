// The Vagrant Cloud API's records, as `vagrant cloud` (the vagrant_cloud gem) and Packer read them: an
// organization with its boxes, a box with its versions, a version with its providers. Only members the gem's
// classes know (it refuses unknown ones in search results), and `created_at` on every record: the clients take its
// presence as "this exists". v1 shows one provider entry per provider (its default architecture's file); v2 one
// per architecture, with `architecture` and `default_architecture`.
import type { FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Access } from '../access/hierarchy.ts';
import { isMember } from '../access/hierarchy.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf, downloadUrl } from '../http/base-url.ts';
import { architectureRow, fileRow, int8, providerRow, versionRow, type Box, type Organization, type Version } from '../records.ts';

export const declaredArchitectureRow = architectureRow.extend({ declared_checksum_type: z.string().nullable(), declared_checksum: z.string().nullable() });
// The members of each record that the documents show, and no more: a page of search results is hundreds of these
// records, and whole rows (to_jsonb) were most of its cost in PostgreSQL and in the service (make bench ONLY==scale).
const treeProvider = providerRow.pick({ id: true, name: true, created_at: true, updated_at: true });
const treeArchitecture = declaredArchitectureRow.pick({ name: true, default_box: true, declared_checksum_type: true, declared_checksum: true });
const treeFile = fileRow.pick({ file_name: true, checksum: true, checksum_type: true, download_count: true, updated_at: true });
const treeRow = z.object({ box_id: int8, v: versionRow, p: treeProvider.nullable(), a: treeArchitecture.nullable(), f: treeFile.nullable() });
type TreeRow = z.output<typeof treeRow>;

/** Which API the document is for: v2 names architectures. */
export interface ApiFlavour {
  v2: boolean;
}

export type CloudDocument = Record<string, unknown>;

interface Names {
  org: string;
  box: string;
}

function providerDocument(base: string, names: Names, version: Version, row: TreeRow, flavour: ApiFlavour): CloudDocument {
  const { p, a, f } = row;
  const url = f && a ? downloadUrl(base, { ...names, version: version.version_number, provider: p!.name, arch: a.name, fileName: f.file_name }) : null;
  return {
    name: p!.name,
    hosted: true,
    created_at: p!.created_at,
    updated_at: f?.updated_at ?? p!.updated_at,
    checksum: f ? f.checksum : (a?.declared_checksum ?? null),
    checksum_type: f ? f.checksum_type : (a?.declared_checksum_type ?? null),
    original_url: null,
    download_url: url,
    url,
    ...(flavour.v2 ? { architecture: a?.name ?? null, default_architecture: a?.default_box ?? false } : {}),
  };
}

function versionDocument(base: string, names: Names, rows: TreeRow[], flavour: ApiFlavour): CloudDocument {
  const version = rows[0]!.v;
  const seen = new Set<number>();
  const providers: CloudDocument[] = [];
  for (const row of rows) {
    if (!row.p) continue;
    // v1: the default architecture's entry (rows come default first), one per provider.
    if (!flavour.v2 && seen.has(row.p.id)) continue;
    seen.add(row.p.id);
    providers.push(providerDocument(base, names, version, row, flavour));
  }
  return {
    version: version.version_number,
    number: version.version_number,
    status: version.status,
    description: version.description,
    description_markdown: version.description,
    created_at: version.created_at,
    updated_at: version.updated_at,
    providers,
  };
}

function groupBy<T>(rows: readonly T[], key: (row: T) => number): T[][] {
  const groups = new Map<number, T[]>();
  for (const row of rows) {
    const list = groups.get(key(row));
    if (list) list.push(row);
    else groups.set(key(row), [row]);
  }
  return [...groups.values()];
}

export function boxDocument(base: string, org: Organization, box: Box, rows: TreeRow[], flavour: ApiFlavour): CloudDocument {
  const names = { org: org.name, box: box.name };
  const versions = groupBy(rows, (r) => r.v.id).map((group) => versionDocument(base, names, group, flavour));
  const current = versions.find((v) => v.status === 'active') ?? null;
  return {
    name: box.name,
    username: org.name,
    tag: `${org.name}/${box.name}`,
    short_description: box.description.split('\n')[0]!.slice(0, 120),
    description: box.description,
    description_markdown: box.description,
    private: !box.is_public,
    downloads: rows.reduce((sum, r) => sum + (r.f?.download_count ?? 0), 0),
    created_at: box.created_at,
    updated_at: box.updated_at,
    current_version: current,
    versions,
  };
}

/** The versions (newest first, RubyGems order), providers, architectures and files of these boxes that the caller may see. */
export async function loadTrees(ctx: ServiceContext, boxIds: readonly number[], access: Access, versionId?: number): Promise<Map<number, TreeRow[]>> {
  const rows =
    boxIds.length === 0
      ? []
      : await ctx.pool.any(sql.type(treeRow)`
    select v.box_id,
      json_build_object('id', v.id, 'box_id', v.box_id, 'version_number', v.version_number, 'description', v.description, 'status', v.status,
                        'created_at', v.created_at, 'updated_at', v.updated_at) as v,
      case when p.id is not null then json_build_object('id', p.id, 'name', p.name, 'created_at', p.created_at, 'updated_at', p.updated_at) end as p,
      case when a.id is not null then json_build_object('name', a.name, 'default_box', a.default_box,
                        'declared_checksum_type', a.declared_checksum_type, 'declared_checksum', a.declared_checksum) end as a,
      case when f.id is not null then json_build_object('file_name', f.file_name, 'checksum', f.checksum, 'checksum_type', f.checksum_type,
                        'download_count', f.download_count, 'updated_at', f.updated_at) end as f
    from versions v
    left join providers p on p.version_id = v.id
    left join architectures a on a.provider_id = p.id
    left join files f on f.architecture_id = a.id
    where v.box_id = any(${sql.array([...boxIds], 'int8')}) and (${isMember(access)} or v.status = 'active')
      and (${versionId ?? null}::bigint is null or v.id = ${versionId ?? null})
    order by v.version_key desc, lower(p.name), a.default_box desc, lower(a.name)`);
  return new Map(groupBy(rows, (r) => r.box_id).map((group) => [group[0]!.box_id, group]));
}

export async function boxDocumentOf(
  ctx: ServiceContext,
  request: FastifyRequest,
  found: Access & { org: Organization; box: Box | undefined },
  flavour: ApiFlavour,
): Promise<CloudDocument> {
  const trees = await loadTrees(ctx, [found.box!.id], found);
  return boxDocument(baseUrlOf(ctx, request), found.org, found.box!, trees.get(found.box!.id) ?? [], flavour);
}

export async function versionDocumentOf(
  ctx: ServiceContext,
  request: FastifyRequest,
  found: Access & { org: Organization; box: Box | undefined; version: Version | undefined },
  flavour: ApiFlavour,
): Promise<CloudDocument> {
  const trees = await loadTrees(ctx, [found.box!.id], found, found.version!.id);
  const rows = trees.get(found.box!.id) ?? [];
  const names = { org: found.org.name, box: found.box!.name };
  return versionDocument(baseUrlOf(ctx, request), names, rows, flavour);
}

/** One provider entry (v2: of one architecture) of a version document. */
export async function providerDocumentOf(
  ctx: ServiceContext,
  request: FastifyRequest,
  found: Access & { org: Organization; box: Box | undefined; version: Version | undefined },
  providerName: string,
  architecture: string | undefined,
  flavour: ApiFlavour,
): Promise<CloudDocument | undefined> {
  const version = await versionDocumentOf(ctx, request, found, flavour);
  return (version.providers as CloudDocument[]).find(
    (p) =>
      (p.name as string).toLowerCase() === providerName.toLowerCase() &&
      (architecture === undefined || (p.architecture as string).toLowerCase() === architecture.toLowerCase()),
  );
}
