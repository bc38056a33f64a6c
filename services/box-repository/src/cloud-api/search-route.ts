// `vagrant cloud search`: boxes the caller may list whose name, organization or description contains the query,
// that have a released version (the client prints the current version of every result).
//
// Paging: `page` / `limit` as the hosted API has them, and a keyset cursor `after` (opaque) that the answer's `Link:
// <…>; rel="next"` header carries: following it costs what page 1 costs however deep it goes (make bench ONLY==scale).
// A `page` asked for directly is read from where it starts (search-positions.ts) while nothing searched has changed
// since that was found; else its rows are skipped to (OFFSET over the sort keys walked in index order). The answer
// is the page's cached result documents joined (search-document-cache.ts), checked per box on every request.
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
import { positionKey } from './search-positions.ts';
import { searchPage, type PartsWithRows, type SearchFilter, type SearchPageKey, type SearchRows } from './search-query.ts';

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
    const caller = `${userId ?? ''} ${saOrg ?? ''} ${admin}`;
    const position = (n: number) => positionKey({ caller, pattern, provider: filter.provider, sort, order, limit, page: n });
    const known = ctx.searchPositions.partsWithRows(positionKey({ caller, pattern, provider: filter.provider, sort, order }));
    const {
      rows: keys,
      generation,
      more,
    } = after
      ? await searchPage(ctx.pool, filter, sort, order, { count: limit + 1, offset: 0, after, known })
      : await pageByNumber(ctx, { filter, sort, order, limit, page, position: position(page), known });
    const shown = keys.slice(0, limit);
    const last = shown.at(-1);
    if (more && last) {
      const cursor: SearchCursor = { sort, order, key: last.key, org: last.org_key, box: last.box_key };
      reply.header('link', nextLink(request, { after: encodeSearchCursor(cursor) }, ['page']));
      // Where the next page starts, for a client that asks for it by number.
      if (!after && generation !== null) ctx.searchPositions.set(position(page + 1), { cursor, generation });
    }
    const base = baseUrlOf(ctx, request);
    reply.type('application/json; charset=utf-8');
    return answerOf(await documentsOf(ctx, shown, base, flavour));
  });
}

interface NumberedPage {
  filter: SearchFilter;
  sort: SearchSort;
  order: SearchOrder;
  limit: number;
  page: number;
  /** The key of the page's position (search-positions.ts). */
  position: string;
  known: PartsWithRows;
}

/**
 * Page `page` and one row more: from its known position while the search generation is the one it was found at
 * (a walk from a keyset cursor), else by skipping the rows before it, in one snapshot (repeatable read) with the
 * generation, keeping where the page starts (the row before it) for the next request.
 */
async function pageByNumber(ctx: ServiceContext, search: NumberedPage): Promise<SearchRows> {
  const { filter, sort, order, limit, page, known: knownParts } = search;
  const start = page > 1 ? ctx.searchPositions.get(search.position) : undefined;
  if (start) {
    const found = await searchPage(ctx.pool, filter, sort, order, { count: limit + 1, offset: 0, after: start.cursor, known: knownParts });
    if (found.generation === start.generation) return found;
  }
  if (page === 1) return searchPage(ctx.pool, filter, sort, order, { count: limit + 1, offset: 0, after: undefined, known: knownParts });
  return ctx.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`set transaction isolation level repeatable read, read only`);
    // From the row before the page: the position to keep.
    const found = await searchPage(tx, filter, sort, order, { count: limit + 2, offset: (page - 1) * limit - 1, after: undefined, known: knownParts });
    const before = found.rows[0];
    if (before && found.generation !== null) {
      ctx.searchPositions.set(search.position, {
        cursor: { sort, order, key: before.key, org: before.org_key, box: before.box_key },
        generation: found.generation,
      });
    }
    return { ...found, rows: found.rows.slice(1) };
  });
}

/**
 * The JSON text of each box's document, in the page's order: from the cache while its stamp holds, else built (and
 * cached) from the box's rows. Search shows what anyone may see of a box: its released versions, so one document
 * serves every caller the page's query let see the box. A box deleted since its key was read is left out.
 */
async function documentsOf(ctx: ServiceContext, shown: SearchPageKey[], base: string, flavour: ApiFlavour): Promise<Buffer[]> {
  const cache = ctx.searchDocuments;
  const kind = flavour.v2 ? 'v2' : 'v1';
  const fragments = shown.map((k) => cache.get(k.id, kind, base, k.stamp));
  const missing = shown.filter((_, index) => fragments[index] === undefined);
  if (missing.length > 0) {
    const ids = sql.array(
      missing.map((k) => k.id),
      'int8',
    );
    const records = await ctx.pool.any(sql.type(z.object({ b: boxRow, o: organizationRow }))`
      select to_jsonb(b) as b, to_jsonb(o) as o from boxes b join organizations o on o.id = b.organization_id where b.id = any(${ids})`);
    const trees = await loadTrees(
      ctx,
      records.map((r) => r.b.id),
      { principal: null, role: null, isGlobalAdmin: false },
    );
    const recordOf = new Map(records.map((r) => [r.b.id, r]));
    for (const [index, key] of shown.entries()) {
      const record = fragments[index] === undefined ? recordOf.get(key.id) : undefined;
      if (!record) continue;
      // Cached with the stamp read before the rows were: a change in between is seen as a new stamp next time.
      const json = JSON.stringify(boxDocument(base, record.o, record.b, trees.get(key.id) ?? [], flavour));
      fragments[index] = cache.set(key.id, kind, base, key.stamp, json);
    }
  }
  return fragments.filter((json) => json !== undefined);
}

const OPEN = Buffer.from('{"boxes":[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']}');

/** `{"boxes":[…]}` of the documents' JSON: the bytes JSON.stringify writes for the same records. */
function answerOf(documents: Buffer[]): Buffer {
  const parts = [OPEN, ...documents.flatMap((document, index) => (index === 0 ? [document] : [COMMA, document])), CLOSE];
  return Buffer.concat(parts);
}
