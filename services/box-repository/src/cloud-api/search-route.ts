// `vagrant cloud search`: boxes the caller may list whose name, organization or description contains the query,
// that have a released version (the client prints the current version of every result).
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { principalOf } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf } from '../http/base-url.ts';
import { boxRow, organizationRow } from '../records.ts';
import { boxDocument, loadTrees, type ApiFlavour } from './documents.ts';

const searchQuery = {
  type: 'object',
  properties: {
    q: { type: 'string', maxLength: 200 },
    provider: { type: 'string', maxLength: 100 },
    sort: { type: 'string', enum: ['downloads', 'created', 'updated'] },
    order: { type: 'string', enum: ['desc', 'asc'] },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
    page: { type: 'integer', minimum: 1, maximum: 10_000, default: 1 },
  },
} as const;
type SearchQuery = { q?: string; provider?: string; sort?: 'downloads' | 'created' | 'updated'; order?: 'desc' | 'asc'; limit: number; page: number };

export function searchRoute(app: FastifyInstance, ctx: ServiceContext, flavour: ApiFlavour): void {
  app.get<{ Querystring: SearchQuery }>('/search', { schema: { querystring: searchQuery } }, async (request) => {
    const principal = await principalOf(ctx, request);
    const userId = principal?.kind === 'user' ? principal.id : null;
    const saOrg = principal?.kind === 'service_account' ? principal.organizationId : null;
    const admin = principal?.kind === 'user' && principal.isAdmin;
    const { q, provider, limit, page } = request.query;
    const pattern = q ? `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const column = { downloads: sql.fragment`coalesce(d.count, 0)`, created: sql.fragment`b.created_at`, updated: sql.fragment`b.updated_at` }[request.query.sort ?? 'downloads'];
    const direction = request.query.order === 'asc' ? sql.fragment`asc` : sql.fragment`desc`;
    const rows = await ctx.pool.any(sql.type(z.object({ b: boxRow, o: organizationRow }))`
      select to_jsonb(b) as b, to_jsonb(o) as o
      from boxes b join organizations o on o.id = b.organization_id
      left join box_downloads d on d.box_id = b.id
      left join memberships m on m.organization_id = o.id and m.user_id = ${userId}::uuid
      where b.released
        and (${admin} or m.role is not null or b.organization_id = ${saOrg}::bigint or (o.is_public and b.published and b.is_public))
        and (${pattern}::text is null or b.name ilike ${pattern} or o.name ilike ${pattern} or b.description ilike ${pattern})
        and (${provider ?? null}::text is null or exists (
          select 1 from versions v join providers p on p.version_id = v.id join architectures a on a.provider_id = p.id join files f on f.architecture_id = a.id
          where v.box_id = b.id and v.status = 'active' and lower(p.name) = lower(${provider ?? null})))
      order by ${column} ${direction}, lower(o.name), lower(b.name) limit ${limit} offset ${(page - 1) * limit}`);
    const base = baseUrlOf(ctx, request);
    // Search shows what anyone may see of a box: its released versions.
    const trees = await loadTrees(ctx, rows.map((r) => r.b.id), { principal: null, role: null, isGlobalAdmin: false });
    return { boxes: rows.map((r) => boxDocument(base, r.o, r.b, trees.get(r.b.id) ?? [], flavour)) };
  });
}
