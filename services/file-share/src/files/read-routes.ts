// GET/HEAD /{path}: a file's bytes (or its entry as JSON), or a folder's listing as JSON or an HTML page.
import { badRequest, notFound, sendStoredBody } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { mayRead, requirePermission } from '../auth/principal.ts';
import type { Viewer } from '../console/layout.ts';
import { PAGE_HEADERS, sendPage } from '../console/page-security.ts';
import { signInForm } from '../console/sign-in.ts';
import { envelopeSchema, errorSchema, ok } from '../http/envelope.ts';
import { listingFormat, wantsHtmlPage, type ListingFormat } from '../http/negotiate.ts';
import { isWithin, parseRequestPath } from '../paths/share-path.ts';
import type { Entry } from '../tree/tree-store.ts';
import { FILE_SECURITY_HEADERS, sendFile } from './download.ts';
import { entrySchema, entryView } from './entry-view.ts';
import type { FileRoutesOptions } from './file-routes.ts';
import type { ListingCache } from './listing-cache.ts';
import { decodeCursor, MAX_CURSOR_LENGTH } from './listing-cursor.ts';
import { escapeHtml, listingFrame, renderSignInRequired } from './listing-html.ts';
import type { HtmlListings } from './listing-html-stream.ts';
import { DEFAULT_HTML_LIMIT, DEFAULT_JSON_LIMIT, MAX_LIMIT, MAX_PAGE, pathParams, rawPathOf } from './share-request.ts';

type ReadQuery = { format?: 'json' | 'html'; page: number; limit?: number; after?: string };

interface ReadDeps {
  options: FileRoutesOptions;
  listings: ListingCache;
  htmlListings: HtmlListings;
}

const listingSchema = {
  type: 'object',
  description: 'A folder listing (with `Accept: application/json` or `?format=json`); otherwise an HTML page.',
  properties: {
    success: { type: 'boolean' },
    message: { type: 'string' },
    path: { type: 'string' },
    total: { type: 'integer', description: 'Entries in the folder (all pages)' },
    page: { type: 'integer' },
    limit: { type: 'integer' },
    next: {
      type: ['string', 'null'],
      description: 'Null on the last page; else the cursor of the next page: ask again with `?after=<next>` (the `Link: <…>; rel="next"` header is that URL)',
    },
    files: { type: 'array', items: entrySchema },
  },
  required: ['success', 'path', 'total', 'files'],
};

const pageQuery = {
  page: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1 },
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: MAX_LIMIT,
    description: `Entries per page (default ${DEFAULT_JSON_LIMIT} for JSON, ${DEFAULT_HTML_LIMIT} for HTML)`,
  },
};
const cursorQuery = {
  after: {
    type: 'string',
    minLength: 1,
    maxLength: MAX_CURSOR_LENGTH,
    description: "JSON listings: the page after this cursor (a listing's `next`); not with `page`",
  },
};

const binary = { type: 'string', format: 'binary' };
const fileBytes = { 'application/octet-stream': { schema: binary }, '*/*': { schema: binary } };
const fileEntrySchema = envelopeSchema({ type: 'object', properties: { file: entrySchema }, required: ['file'] });
/** A browser asking for a page gets these as HTML; everyone else in the envelope. */
const pageOrEnvelope = (description: string) => ({
  description,
  content: { 'application/json': { schema: errorSchema }, 'text/html': { schema: { type: 'string' } } },
});

const readSchema = {
  summary: 'Download a file or list a folder',
  description:
    'A file streams with Range (206/416), ETag and Last-Modified; `?format=json` on a file returns its entry. ' +
    'A folder without a trailing slash redirects (301) to the slash form; a folder answers JSON when asked ' +
    '(`Accept: application/json` preferred over text/html, or `?format=json`) and an HTML listing otherwise. ' +
    'Order: folders first, then files, by name in byte order. A JSON listing of a folder larger than one page ' +
    'has `next` (a cursor) and a `Link: <…>; rel="next"` header: follow them until `next` is null to read everything.',
  tags: ['files'],
  params: pathParams,
  querystring: {
    type: 'object',
    properties: { format: { type: 'string', enum: ['json', 'html'] }, ...pageQuery, ...cursorQuery },
  },
  response: {
    200: {
      description: "A folder listing or a file entry (JSON), a listing page (HTML), or the file's bytes",
      content: { 'application/json': { schema: { anyOf: [listingSchema, fileEntrySchema] } }, 'text/html': { schema: { type: 'string' } }, ...fileBytes },
    },
    206: { description: 'The requested range of the file (Range)', content: fileBytes },
    301: { description: 'A folder without its trailing slash: redirected to it' },
    304: { description: 'Not modified (If-None-Match / If-Modified-Since)' },
    401: pageOrEnvelope('Authentication required'),
    404: pageOrEnvelope('Not found'),
    416: {},
  },
};

function htmlNotFound(reply: FastifyReply, path: string): FastifyReply {
  return reply
    .status(404)
    .headers(FILE_SECURITY_HEADERS)
    .type('text/html; charset=utf-8')
    .send(
      `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Not found</title></head><body><h1>Not found</h1><p>${escapeHtml(path)} does not exist.</p><p><a href="/">Back to the share</a></p></body></html>\n`,
    );
}

function htmlSignInRequired(reply: FastifyReply, html: string): FastifyReply {
  return sendPage(reply.header('www-authenticate', 'Bearer realm="boxyard file-share"'), html, 401).header('cache-control', 'no-store');
}

/** Who the page is shown to, and where sign-in returns. */
function viewerOf(request: FastifyRequest, options: FileRoutesOptions): Viewer {
  const { pathname, search } = rawPathOf(request);
  return {
    username: request.principal.user?.username ?? null,
    via: request.principal.via,
    signIn: options.signIn,
    returnTo: `${pathname}${search}`,
  };
}

/** The request's own URL for the page after `cursor`: its format and limit kept, `page` and `after` replaced. */
function nextPageUrl(request: FastifyRequest, cursor: string): string {
  const query = request.query as ReadQuery;
  const params = new URLSearchParams();
  if (query.format) params.set('format', query.format);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  params.set('after', cursor);
  return `${rawPathOf(request).pathname}?${params.toString()}`;
}

/** A folder's page of entries (`path` as the request named it): JSON, or an HTML listing. */
async function sendFolder(
  { options, listings, htmlListings }: ReadDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  entry: Entry,
  format: ListingFormat,
) {
  const query = request.query as ReadQuery;
  const limit = query.limit ?? (format === 'json' ? DEFAULT_JSON_LIMIT : DEFAULT_HTML_LIMIT);
  const page = { offset: (query.page - 1) * limit, limit };
  reply.header('cache-control', 'private, no-cache');
  if (format === 'json') {
    if (query.after !== undefined && query.page !== 1) throw badRequest('Give `page` or `after`, not both');
    const after = query.after === undefined ? undefined : decodeCursor(query.after);
    // Serialized by PostgreSQL and cached per folder version (listing-cache.ts): sent as bytes, so the
    // response schema's serializer never walks 10,000 objects.
    const listing = await listings.body(entry, query.page, after ? { offset: 0, limit, after } : page, query.after);
    if (!listing) throw notFound(`${path} does not exist`);
    if (listing.next) reply.header('link', `<${nextPageUrl(request, listing.next)}>; rel="next"`);
    return reply.type('application/json; charset=utf-8').send(listing.body);
  }
  const principal = request.principal;
  const frame = (total: number) =>
    listingFrame({
      path: entry.path,
      total,
      page: query.page,
      limit,
      canUpload: principal.via !== 'anonymous' && principal.permissions.has('uploads') && isWithin(entry.path, principal.scope),
      canDelete: principal.via !== 'anonymous' && principal.permissions.has('delete') && isWithin(entry.path, principal.scope),
      canShare: principal.user !== null && principal.via !== 'anonymous' && mayRead(principal, entry.path),
      viewer: viewerOf(request, options),
    });
  // Streamed (listing-html-stream.ts): the page is never one string in memory.
  const { stream, length } = await htmlListings.page(entry, query.page, limit, frame);
  if (length !== undefined) reply.header('content-length', length);
  return sendStoredBody(request, reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8'), stream);
}

async function read(deps: ReadDeps, request: FastifyRequest, reply: FastifyReply) {
  const { tree, store } = deps.options;
  const { pathname, search } = rawPathOf(request);
  const target = parseRequestPath(pathname);
  const query = request.query as ReadQuery;
  const htmlPage = wantsHtmlPage(request.headers.accept) && query.format !== 'json';
  if (htmlPage && request.principal.via === 'anonymous' && !mayRead(request.principal, target.path)) {
    // A browser is offered the sign-in page. The challenge leaves Basic out so the browser shows this page
    // instead of its password prompt; tools (Accept without text/html preferred) still get the Basic one.
    return htmlSignInRequired(reply, renderSignInRequired(target.path, viewerOf(request, deps.options), signInForm(`${pathname}${search}`)));
  }
  requirePermission(request.principal, 'downloads', target.path);
  const entry = await tree.find(target.path);
  const format = listingFormat(query.format, request.headers.accept);
  reply.header('vary', 'Accept');
  if (!entry || (entry.kind === 'file' && target.trailingSlash)) {
    if (htmlPage) return htmlNotFound(reply, target.path);
    throw notFound(`${target.path} does not exist`);
  }
  if (entry.kind === 'dir' && !target.trailingSlash) return reply.redirect(`${pathname}/${search}`, 301);
  if (entry.kind === 'file') {
    if (query.format === 'json')
      return reply
        .type('application/json; charset=utf-8')
        .serializer(JSON.stringify)
        .send(ok('File', { file: entryView(entry) }));
    return sendFile(request, reply, entry, store, () => tree.find(target.path));
  }
  return sendFolder(deps, request, reply, target.path, entry, format);
}

export function readRoute(app: FastifyInstance, deps: ReadDeps): void {
  app.get('/*', { schema: readSchema }, (request, reply) => read(deps, request, reply));
}
