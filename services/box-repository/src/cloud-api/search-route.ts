// `vagrant cloud search`: boxes the caller may list whose name, organization or description contains the query,
// that have a released version (the client prints the current version of every result).
//
// Paging: `page` / `limit` as the hosted API has them, and a keyset cursor `after` (opaque) that the answer's `Link:
// <…>; rel="next"` header carries: following it costs what page 1 costs however deep it goes (make bench ONLY=scale).
// A `page` asked for directly still skips rows (OFFSET), but only over the sort keys walked in index order
// (search-query.ts): the records are built for the page's rows alone.
import { HttpError } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { principalOf } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf } from '../http/base-url.ts';
import { nextLink } from '../http/pagination.ts';
import { boxRow, organizationRow } from '../records.ts';
import { boxDocument, loadTrees, type ApiFlavour } from './documents.ts';
import { decodeSearchCursor, encodeSearchCursor, type SearchCursor, type SearchOrder, type SearchSort } from './search-cursor.ts';
import { searchPage } from './search-query.ts';

const searchQuery = {
  type: 'object',
  properties: {
    q: { type: 'string', maxLength: 200 },
    provider: { type: 'string', maxLength: 100 },
    sort: { type: 'string', enum: ['downloads', 'created', 'updated'] },
    order: { type: 'string', enum: ['desc', 'asc'] },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
    page: { type: 'integer', minimum: 1, maximum: 10_000, default: 1 },
    after: { type: 'string', maxLength: 1000 },
  },
} as const;
type SearchQuery = { q?: string; provider?: string; sort?: SearchSort; order?: SearchOrder; limit: number; page: number; after?: string };

export function searchRoute(app: FastifyInstance, ctx: ServiceContext, flavour: ApiFlavour): void {
  app.get<{ Querystring: SearchQuery }>('/search', { schema: { querystring: searchQuery } }, async (request, reply) => {
    const principal = await principalOf(ctx, request);
    const userId = principal?.kind === 'user' ? principal.id : null;
    const saOrg = principal?.kind === 'service_account' ? principal.organizationId : null;
    const admin = principal?.kind === 'user' && principal.isAdmin;
    const { q, provider, limit, page } = request.query;
    const sort = request.query.sort ?? 'downloads';
    const order = request.query.order ?? 'desc';
    const after = request.query.after === undefined ? undefined : decodeSearchCursor(request.query.after, sort, order);
    if (after === null) throw new HttpError(400, 'after must be the cursor a next link of this search (same sort and order) gave');
    const pattern = q ? `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const filter = { userId, saOrg, admin, pattern, provider: provider ?? null };
    const offset = after ? 0 : (page - 1) * limit;
    const keys = await searchPage(ctx.pool, filter, sort, order, { limit, offset, after });
    const shown = keys.slice(0, limit);
    const last = shown.at(-1);
    if (keys.length > limit && last) {
      const cursor: SearchCursor = { sort, order, key: last.key, org: last.org_key, box: last.box_key };
      reply.header('link', nextLink(request, { after: encodeSearchCursor(cursor) }, ['page']));
    }
    const records =
      shown.length === 0
        ? []
        : await ctx.pool.any(sql.type(z.object({ b: boxRow, o: organizationRow }))`
      select to_jsonb(b) as b, to_jsonb(o) as o from boxes b join organizations o on o.id = b.organization_id
      where b.id = any(${sql.array(
        shown.map((k) => k.id),
        'int8',
      )})`);
    const byId = new Map(records.map((r) => [r.b.id, r]));
    // A box deleted since its key was read is left out.
    const rows = shown.flatMap((k) => byId.get(k.id) ?? []);
    const base = baseUrlOf(ctx, request);
    // Search shows what anyone may see of a box: its released versions.
    const trees = await loadTrees(
      ctx,
      rows.map((r) => r.b.id),
      { principal: null, role: null, isGlobalAdmin: false },
    );
    return { boxes: rows.map((r) => boxDocument(base, r.o, r.b, trees.get(r.b.id) ?? [], flavour)) };
  });
}
