// Lists are plain arrays (the seed's shape); pages are chosen with `page` / `per_page` and described by the
// `X-Total-Count` and `Link` (rel="next"/"prev") headers, as GitHub does. A list that can be deep also takes a
// keyset cursor `after` (the last item of the previous page): its next link carries one, so following next costs
// what the first page costs however deep it goes, while `page=N` asked for directly keeps working (OFFSET).
import type { FastifyReply, FastifyRequest } from 'fastify';

export const MAX_PER_PAGE = 100;
/** Far past any real list, and small enough that the offset stays an exact integer PostgreSQL accepts. */
export const MAX_PAGE = 1_000_000;

export const paginationQuery = {
  page: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1, description: `Page number, from 1 (at most ${MAX_PAGE}).` },
  per_page: { type: 'integer', minimum: 1, maximum: MAX_PER_PAGE, default: 25, description: `Items per page (at most ${MAX_PER_PAGE}).` },
} as const;

export interface Page {
  limit: number;
  offset: number;
  page: number;
}

export function pageOf(query: { page?: number; per_page?: number }): Page {
  const page = query.page ?? 1;
  const limit = query.per_page ?? 25;
  return { page, limit, offset: (page - 1) * limit };
}

/** The request's own path and query with `set` set and `remove` removed: `<…>; rel="next"`. */
export function nextLink(request: FastifyRequest, set: Record<string, string>, remove: string[] = []): string {
  const url = new URL(request.url, 'http://placeholder');
  for (const name of remove) url.searchParams.delete(name);
  for (const [name, value] of Object.entries(set)) url.searchParams.set(name, value);
  return `<${url.pathname}${url.search}>; rel="next"`;
}

/**
 * X-Total-Count and Link for a page. `keyset`, for lists paged by keyset: the cursor of the next page, undefined on
 * the last; the next link carries it (with the next page's number, which it takes precedence over), the prev link
 * does not.
 */
export function describePage(request: FastifyRequest, reply: FastifyReply, page: Page, total: number, keyset?: { next: string | undefined }): void {
  reply.header('x-total-count', String(total));
  const links: string[] = [];
  const url = new URL(request.url, 'http://placeholder');
  const link = (n: number, rel: string, cursor?: string) => {
    url.searchParams.set('page', String(n));
    url.searchParams.set('per_page', String(page.limit));
    if (cursor === undefined) url.searchParams.delete('after');
    else url.searchParams.set('after', cursor);
    links.push(`<${url.pathname}${url.search}>; rel="${rel}"`);
  };
  if (keyset) {
    if (keyset.next !== undefined) link(page.page + 1, 'next', keyset.next);
  } else if (page.offset + page.limit < total) link(page.page + 1, 'next');
  if (page.page > 1) link(page.page - 1, 'prev');
  if (links.length > 0) reply.header('link', links.join(', '));
}
