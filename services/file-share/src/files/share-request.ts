// How the share's routes read a request: the raw URL path (paths/share-path.ts parses it; the router's own decoding
// of the wildcard is never used, only documented), and the paging of listings and searches.
import type { FastifyRequest } from 'fastify';

export const DEFAULT_JSON_LIMIT = 1000;
export const DEFAULT_HTML_LIMIT = 10_000;
export const MAX_LIMIT = 10_000;
/** Far past any real folder, and small enough that the offset stays an exact integer PostgreSQL accepts. */
export const MAX_PAGE = 1_000_000;

export const rawPathOf = (request: FastifyRequest) => {
  const url = request.raw.url ?? '/';
  const query = url.indexOf('?');
  return { pathname: query === -1 ? url : url.slice(0, query), search: query === -1 ? '' : url.slice(query) };
};

/** Documents the wildcard (`/{*}` in the OpenAPI description): the share path, percent-encoded per segment. */
export const pathParams = {
  type: 'object',
  properties: { '*': { type: 'string', description: 'The share path without its leading slash, each name percent-encoded (e.g. `docs/My%20File.txt`)' } },
};
