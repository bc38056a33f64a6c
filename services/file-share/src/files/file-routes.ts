// The share's own paths: GET/HEAD /{path} (file bytes or a listing), POST /{path} (upload, or /folders and
// /search with a JSON body), PUT /{path}?action=rename, DELETE /{path}. The raw URL path is parsed once by
// paths/share-path.ts; the router's own decoding of the wildcard is never used.
// The parts: read-routes.ts (GET), post-routes.ts (POST); rename and delete are here.
import { badRequest, methodNotAllowed, notFound, type ObjectStore } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import type { DatabasePool } from 'slonik';
import { refuse, requirePermission } from '../auth/principal.ts';
import { envelopeSchema, ok } from '../http/envelope.ts';
import { parseRequestPath, RESERVED_TOP_LEVEL_NAMES, validateName } from '../paths/share-path.ts';
import type { Sweeper } from '../maintenance/sweeper.ts';
import type { Tree } from '../tree/tree-store.ts';
import { entrySchema, entryView } from './entry-view.ts';
import { createListingCache } from './listing-cache.ts';
import { createHtmlListing } from './listing-html-stream.ts';
import { postRoute } from './post-routes.ts';
import { readRoute } from './read-routes.ts';
import { pathParams, rawPathOf } from './share-request.ts';

export { DEFAULT_HTML_LIMIT, DEFAULT_JSON_LIMIT, MAX_LIMIT, MAX_PAGE } from './share-request.ts';
export { entrySchema, entryView } from './entry-view.ts';

export interface FileRoutesOptions {
  pool: DatabasePool;
  store: ObjectStore;
  tree: Tree;
  sweeper: Sweeper;
  maxUploadBytes: number;
  /** Provider sign-in (auth.sign_in), when enabled: the listing links to it. */
  signIn?: { displayName: string } | undefined;
}

/**
 * Top-level names the service's own routes use are never share paths: a method those routes lack answers 405
 * (or 404 where nothing is routed) before the share's catch-all reads a body meant for something else, and the
 * catch-all's methods are not in their Allow.
 */
function guardReservedNames(app: FastifyInstance): void {
  const reserved = (pathname: string) => RESERVED_TOP_LEVEL_NAMES.has(pathname.split('/')[1] ?? '');
  app.methodTable.shadow('/*', reserved);
  app.addHook('onRequest', async (request) => {
    const { pathname } = rawPathOf(request);
    if (!reserved(pathname)) return;
    const allowed = app.methodTable.allowed(pathname);
    if (allowed.length > 0) throw methodNotAllowed(request.method, pathname, allowed);
    throw notFound(`No route for ${request.method} ${pathname}`);
  });
}

function renameRoute(app: FastifyInstance, { tree }: FileRoutesOptions): void {
  app.put(
    '/*',
    {
      schema: {
        summary: 'Rename a file or folder within its folder',
        description:
          '`?action=rename` with `{newName}`; 409 when the new name exists. A folder keeps its contents. ' +
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
}

function deleteRoute(app: FastifyInstance, { tree, sweeper }: FileRoutesOptions): void {
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
      void sweeper.sweepNow();
      return ok('Deleted', { path: entry.path, isDirectory: entry.kind === 'dir', filesDeleted: files });
    },
  );
}

export async function fileRoutes(app: FastifyInstance, options: FileRoutesOptions): Promise<void> {
  const listings = createListingCache(options.tree);
  // An upload's bytes as the body: handed to the route as the request stream, never buffered (the size limit is
  // uploads.max_bytes, enforced while storing).
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  guardReservedNames(app);
  const htmlListings = createHtmlListing(options.tree);
  app.addHook('onClose', (_instance, done) => {
    listings.close();
    htmlListings.close();
    done();
  });
  readRoute(app, { options, listings, htmlListings });
  postRoute(app, options);
  renameRoute(app, options);
  deleteRoute(app, options);
}
