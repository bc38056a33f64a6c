// The share's own paths: GET/HEAD /{path} (file bytes or a listing), POST /{path} (upload, or /folders and
// /search with a JSON body), PUT /{path}?action=rename, DELETE /{path}. The raw URL path is parsed once by
// paths/share-path.ts; the router's own decoding of the wildcard is never used.
import { badRequest, HttpError, methodNotAllowed, notFound, type ObjectStore } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabasePool } from 'slonik';
import { z } from 'zod';
import { mayRead, refuse, requirePermission } from '../auth/principal.ts';
import { envelopeSchema, errorSchema, ok } from '../http/envelope.ts';
import { listingFormat, wantsHtmlPage } from '../http/negotiate.ts';
import { encodePath, isWithin, parentOf, parseRequestPath, RESERVED_TOP_LEVEL_NAMES, validateName, type SharePath } from '../paths/share-path.ts';
import type { Sweeper } from '../maintenance/sweeper.ts';
import type { Entry, Tree } from '../tree/tree-store.ts';
import { FILE_SECURITY_HEADERS, sendFile } from './download.ts';
import { escapeHtml, renderListing, renderSignInRequired } from './listing-html.ts';
import { sendPage } from '../console/page-security.ts';
import { signInForm } from '../console/sign-in.ts';
import type { Viewer } from '../console/layout.ts';
import { handleRawUpload, handleUpload } from './upload.ts';
import { createListingCache } from './listing-cache.ts';

export const DEFAULT_JSON_LIMIT = 1000;
export const DEFAULT_HTML_LIMIT = 10_000;
export const MAX_LIMIT = 10_000;
/** Far past any real folder, and small enough that the offset stays an exact integer PostgreSQL accepts. */
export const MAX_PAGE = 1_000_000;

export interface FileRoutesOptions {
  pool: DatabasePool;
  store: ObjectStore;
  tree: Tree;
  sweeper: Sweeper;
  maxUploadBytes: number;
  /** Provider sign-in (auth.sign_in), when enabled: the listing links to it. */
  signIn?: { displayName: string } | undefined;
}

/** A file entry as the seed lists it. */
export const entryView = (entry: Entry) => ({
  name: entry.name,
  path: entry.path,
  size: entry.size,
  mtime: new Date(entry.mtime).toISOString(),
  checksum: entry.sha256,
  isDirectory: entry.kind === 'dir',
});

export const entrySchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    path: { type: 'string', description: 'Share path, `/` separated, without a trailing slash' },
    size: { type: 'integer', description: 'Bytes (0 for folders)' },
    mtime: { type: 'string', format: 'date-time' },
    checksum: { type: ['string', 'null'], description: 'Lower-case hex SHA-256 (null for folders)' },
    isDirectory: { type: 'boolean' },
  },
  required: ['name', 'path', 'size', 'mtime', 'checksum', 'isDirectory'],
};

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
    files: { type: 'array', items: entrySchema },
  },
  required: ['success', 'path', 'total', 'files'],
};

const rawPathOf = (request: FastifyRequest) => {
  const url = request.raw.url ?? '/';
  const query = url.indexOf('?');
  return { pathname: query === -1 ? url : url.slice(0, query), search: query === -1 ? '' : url.slice(query) };
};

const pageQuery = {
  page: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1 },
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: `Entries per page (default ${DEFAULT_JSON_LIMIT} for JSON, ${DEFAULT_HTML_LIMIT} for HTML)` },
};

/** Documents the wildcard (`/{*}` in the OpenAPI description): the share path, percent-encoded per segment. */
const pathParams = {
  type: 'object',
  properties: { '*': { type: 'string', description: 'The share path without its leading slash, each name percent-encoded (e.g. `docs/My%20File.txt`)' } },
};

const searchBody = z.strictObject({
  query: z.string().min(1).max(1024),
  page: z.number().int().min(1).max(MAX_PAGE).default(1),
  limit: z.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_JSON_LIMIT),
});
const folderBody = z.strictObject({ folderName: z.string() });

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  throw badRequest(
    'Request validation failed',
    result.error.issues.map((issue) => ({
      pointer: `/${issue.path.map(String).join('/')}`,
      rule: issue.code,
      params: {},
      detail: issue.message,
    })),
  );
}

function htmlNotFound(reply: FastifyReply, path: string): FastifyReply {
  return reply
    .status(404)
    .headers(FILE_SECURITY_HEADERS)
    .type('text/html; charset=utf-8')
    .send(`<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Not found</title></head><body><h1>Not found</h1><p>${escapeHtml(path)} does not exist.</p><p><a href="/">Back to the share</a></p></body></html>\n`);
}

function htmlSignInRequired(reply: FastifyReply, html: string): FastifyReply {
  return sendPage(reply.header('www-authenticate', 'Bearer realm="boxyard file-share"'), html, 401).header('cache-control', 'no-store');
}

const binary = { type: 'string', format: 'binary' };
const fileBytes = { 'application/octet-stream': { schema: binary }, '*/*': { schema: binary } };
const fileEntrySchema = envelopeSchema({ type: 'object', properties: { file: entrySchema }, required: ['file'] });
/** A browser asking for a page gets these as HTML; everyone else in the envelope. */
const pageOrEnvelope = (description: string) => ({ description, content: { 'application/json': { schema: errorSchema }, 'text/html': { schema: { type: 'string' } } } });

export async function fileRoutes(app: FastifyInstance, options: FileRoutesOptions): Promise<void> {
  const { tree, store } = options;
  const listings = createListingCache(tree);
  // An upload's bytes as the body: handed to the route as the request stream, never buffered (the size limit is
  // uploads.max_bytes, enforced while storing).
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));

  // Top-level names the service's own routes use are never share paths: a method those routes lack answers 405
  // (or 404 where nothing is routed) before the share's catch-all reads a body meant for something else, and the
  // catch-all's methods are not in their Allow.
  const reserved = (pathname: string) => RESERVED_TOP_LEVEL_NAMES.has(pathname.split('/')[1] ?? '');
  app.methodTable.shadow('/*', reserved);
  app.addHook('onRequest', async (request) => {
    const { pathname } = rawPathOf(request);
    if (!reserved(pathname)) return;
    const allowed = app.methodTable.allowed(pathname);
    if (allowed.length > 0) throw methodNotAllowed(request.method, pathname, allowed);
    throw notFound(`No route for ${request.method} ${pathname}`);
  });

  async function lookup(path: string): Promise<Entry | null> {
    return tree.find(path);
  }

  app.get(
    '/*',
    {
      schema: {
        summary: 'Download a file or list a folder',
        description:
          'A file streams with Range (206/416), ETag and Last-Modified; `?format=json` on a file returns its entry. ' +
          'A folder without a trailing slash redirects (301) to the slash form; a folder answers JSON when asked ' +
          '(`Accept: application/json` preferred over text/html, or `?format=json`) and an HTML listing otherwise. ' +
          'Order: folders first, then files, by name in byte order.',
        tags: ['files'],
        params: pathParams,
        querystring: {
          type: 'object',
          properties: { format: { type: 'string', enum: ['json', 'html'] }, ...pageQuery },
        },
        response: {
          200: {
            description: 'A folder listing or a file entry (JSON), a listing page (HTML), or the file\'s bytes',
            content: { 'application/json': { schema: { anyOf: [listingSchema, fileEntrySchema] } }, 'text/html': { schema: { type: 'string' } }, ...fileBytes },
          },
          206: { description: 'The requested range of the file (Range)', content: fileBytes },
          301: { description: 'A folder without its trailing slash: redirected to it' },
          304: { description: 'Not modified (If-None-Match / If-Modified-Since)' },
          401: pageOrEnvelope('Authentication required'),
          404: pageOrEnvelope('Not found'),
          416: {},
        },
      },
    },
    async (request, reply) => {
      const { pathname, search } = rawPathOf(request);
      const target = parseRequestPath(pathname);
      const query = request.query as { format?: 'json' | 'html'; page: number; limit?: number };
      const htmlPage = wantsHtmlPage(request.headers.accept) && query.format !== 'json';
      const viewer = (): Viewer => ({
        username: request.principal.user?.username ?? null,
        via: request.principal.via,
        signIn: options.signIn,
        returnTo: `${pathname}${search}`,
      });
      if (htmlPage && request.principal.via === 'anonymous' && !mayRead(request.principal, target.path)) {
        // A browser is offered the sign-in page. The challenge leaves Basic out so the browser shows this page
        // instead of its password prompt; tools (Accept without text/html preferred) still get the Basic one.
        return htmlSignInRequired(reply, renderSignInRequired(target.path, viewer(), signInForm(`${pathname}${search}`)));
      }
      requirePermission(request.principal, 'downloads', target.path);
      const entry = await lookup(target.path);
      const format = listingFormat(query.format, request.headers.accept);
      reply.header('vary', 'Accept');
      if (!entry || (entry.kind === 'file' && target.trailingSlash)) {
        if (htmlPage) return htmlNotFound(reply, target.path);
        throw notFound(`${target.path} does not exist`);
      }
      if (entry.kind === 'dir' && !target.trailingSlash) return reply.redirect(`${pathname}/${search}`, 301);
      if (entry.kind === 'file') {
        if (query.format === 'json') return reply.type('application/json; charset=utf-8').serializer(JSON.stringify).send(ok('File', { file: entryView(entry) }));
        return sendFile(request, reply, entry, store, () => lookup(target.path));
      }
      const limit = query.limit ?? (format === 'json' ? DEFAULT_JSON_LIMIT : DEFAULT_HTML_LIMIT);
      const page = { offset: (query.page - 1) * limit, limit };
      reply.header('cache-control', 'private, no-cache');
      if (format === 'json') {
        // Serialized by PostgreSQL and cached per folder version (listing-cache.ts): sent as bytes, so the
        // response schema's serializer never walks 10,000 objects.
        const body = await listings.body(entry, query.page, page);
        if (!body) throw notFound(`${target.path} does not exist`);
        return reply.type('application/json; charset=utf-8').send(body);
      }
      const { total, entries } = await tree.list(entry, page);
      const principal = request.principal;
      const html = renderListing({
        path: entry.path,
        entries,
        total,
        page: query.page,
        limit,
        canUpload: principal.via !== 'anonymous' && principal.permissions.has('uploads') && isWithin(entry.path, principal.scope),
        canDelete: principal.via !== 'anonymous' && principal.permissions.has('delete') && isWithin(entry.path, principal.scope),
        viewer: viewer(),
      });
      return sendPage(reply, html);
    },
  );

  app.post(
    '/*',
    {
      schema: {
        summary: 'Upload a file (multipart part `file`, or the bytes as application/octet-stream), or POST /{path}/folders and /{path}/search with JSON',
        description:
          'multipart/form-data: the part `file` is stored at {path}; when {path} is a folder (existing, or ending in `/`) ' +
          'the part\'s filename is used inside it. Missing parent folders are created. Replacing an existing file needs ' +
          'the `delete` permission too. 201 for a new file, 200 for a replaced one, 413 over `uploads.max_bytes`.\n\n' +
          'application/octet-stream: the body is the file\'s bytes and {path} names the file (`curl --data-binary @f`; ' +
          'the web console uploads this way); same rules.\n\n' +
          'application/json to `/{path}/folders` with `{folderName}` creates a folder (201, 409 if it exists); to ' +
          '`/{path}/search` with `{query, page?, limit?}` finds entries below {path} whose name contains the query ' +
          '(case-insensitive) or whose SHA-256 starts with it (8 to 64 hex digits).',
        tags: ['files'],
        params: pathParams,
      },
    },
    async (request, reply) => {
      const { pathname } = rawPathOf(request);
      const principal = request.principal;
      const raw = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === 'application/octet-stream';
      if (request.isMultipart() || raw) {
        const target = parseRequestPath(pathname);
        const { entry, created, replacedKey } = await (raw ? handleRawUpload : handleUpload)(request, target, principal, {
          pool: options.pool,
          store,
          tree,
          maxBytes: options.maxUploadBytes,
          discardUpload: options.sweeper.discardUpload,
        });
        if (replacedKey) void options.sweeper.sweepNow(); // the replaced bytes
        if (wantsHtmlPage(request.headers.accept)) return reply.redirect(encodePath(parentOf(entry.path), true), 303);
        return reply.status(created ? 201 : 200).send(ok(created ? 'File uploaded' : 'File replaced', { file: entryView(entry) }));
      }
      const slash = pathname.lastIndexOf('/');
      const action = pathname.slice(slash + 1);
      if (action !== 'folders' && action !== 'search') {
        throw new HttpError(415, 'Uploads are multipart/form-data with a part named "file"; JSON is accepted by /{path}/folders and /{path}/search');
      }
      const directory: SharePath = parseRequestPath(slash === 0 ? '/' : `${pathname.slice(0, slash)}/`);
      if (action === 'folders') {
        requirePermission(principal, 'uploads', directory.path);
        const { folderName } = parseBody(folderBody, request.body);
        const folder = await tree.createFolder(directory.path, validateName(folderName, '/folderName'), principal.user?.id ?? null);
        return reply.status(201).send(ok('Folder created', { folder: entryView(folder) }));
      }
      requirePermission(principal, 'downloads', directory.path);
      const body = parseBody(searchBody, request.body);
      const entry = await lookup(directory.path);
      if (!entry || entry.kind !== 'dir') throw notFound(`${directory.path} is not an existing folder`);
      const { total, entries } = await tree.search(entry, body.query, { offset: (body.page - 1) * body.limit, limit: body.limit });
      return ok('Search results', { path: entry.path, query: body.query, total, page: body.page, limit: body.limit, files: entries.map(entryView) });
    },
  );

  app.put(
    '/*',
    {
      schema: {
        summary: 'Rename a file or folder within its folder',
        description: '`?action=rename` with `{newName}`; 409 when the new name exists. A folder keeps its contents. ' +
          'Needs the `uploads` and the `delete` permission (the old path is freed as by a deletion).',
        tags: ['files'],
        params: pathParams,
        querystring: { type: 'object', properties: { action: { type: 'string', enum: ['rename'] } }, required: ['action'] },
        body: {
          type: 'object',
          properties: { newName: { type: 'string', description: 'The new name (one path segment)' } },
          required: ['newName'],
          additionalProperties: false,
        },
        response: { 200: envelopeSchema({ type: 'object', properties: { file: entrySchema, oldPath: { type: 'string' } } }) },
      },
    },
    async (request) => {
      const target = parseRequestPath(rawPathOf(request).pathname);
      const principal = request.principal;
      // A rename takes the entry away from its path as a deletion would (and frees the path for an upload that
      // is then no replacement): it needs delete as well as uploads, so "replacing needs delete" holds.
      requirePermission(principal, 'uploads', target.path);
      requirePermission(principal, 'delete', target.path);
      if (target.path === '/') throw badRequest('The share root cannot be renamed');
      if (target.path === principal.scope) throw refuse(principal, 'Insufficient permissions: a key cannot rename the folder it is limited to');
      const { newName } = request.body as { newName: string };
      const { entry, oldPath } = await tree.rename(target.path, validateName(newName, '/newName'));
      return ok('Renamed', { file: entryView(entry), oldPath });
    },
  );

  app.delete(
    '/*',
    {
      schema: {
        summary: 'Delete a file, or a folder with everything in it',
        description: 'One transaction; the bytes are removed from storage right after the commit.',
        tags: ['files'],
        params: pathParams,
        response: {
          200: envelopeSchema({
            type: 'object',
            properties: { path: { type: 'string' }, isDirectory: { type: 'boolean' }, filesDeleted: { type: 'integer' } },
          }),
        },
      },
    },
    async (request) => {
      const target = parseRequestPath(rawPathOf(request).pathname);
      const principal = request.principal;
      requirePermission(principal, 'delete', target.path);
      if (target.path === '/') throw badRequest('The share root cannot be deleted');
      if (target.path === principal.scope) throw refuse(principal, 'Insufficient permissions: a key cannot delete the folder it is limited to');
      const { entry, files } = await tree.remove(target.path);
      void options.sweeper.sweepNow();
      return ok('Deleted', { path: entry.path, isDirectory: entry.kind === 'dir', filesDeleted: files });
    },
  );
}
