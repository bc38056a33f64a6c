// POST /{path}: an upload (multipart part `file`, or the bytes as application/octet-stream), or JSON to
// /{path}/folders (create a folder) and /{path}/search (find entries below {path}).
import { badRequest, HttpError, notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { requirePermission } from '../auth/principal.ts';
import { ok } from '../http/envelope.ts';
import { wantsHtmlPage } from '../http/negotiate.ts';
import { encodePath, parentOf, parseRequestPath, validateName, type SharePath } from '../paths/share-path.ts';
import { entryView } from './entry-view.ts';
import type { FileRoutesOptions } from './file-routes.ts';
import { DEFAULT_JSON_LIMIT, MAX_LIMIT, MAX_PAGE, pathParams, rawPathOf } from './share-request.ts';
import { handleRawUpload, handleUpload } from './upload.ts';

const searchBody = z.strictObject({
  query: z.string().min(1).max(1024),
  page: z.number().int().min(1).max(MAX_PAGE).default(1),
  limit: z.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_JSON_LIMIT),
});
const folderBody = z.strictObject({ folderName: z.string() });

const postSchema = {
  summary: 'Upload a file (multipart part `file`, or the bytes as application/octet-stream), or POST /{path}/folders and /{path}/search with JSON',
  description:
    'multipart/form-data: the part `file` is stored at {path}; when {path} is a folder (existing, or ending in `/`) ' +
    "the part's filename is used inside it. Missing parent folders are created. Replacing an existing file needs " +
    'the `delete` permission too. 201 for a new file, 200 for a replaced one, 413 over `uploads.max_bytes`.\n\n' +
    "application/octet-stream: the body is the file's bytes and {path} names the file (`curl --data-binary @f`; " +
    'the web console uploads this way); same rules.\n\n' +
    'application/json to `/{path}/folders` with `{folderName}` creates a folder (201, 409 if it exists); to ' +
    '`/{path}/search` with `{query, page?, limit?}` finds entries below {path} whose name contains the query ' +
    '(case-insensitive) or whose SHA-256 starts with it (8 to 64 hex digits).',
  tags: ['files'],
  params: pathParams,
};

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

async function upload(options: FileRoutesOptions, request: FastifyRequest, reply: FastifyReply, raw: boolean) {
  const target = parseRequestPath(rawPathOf(request).pathname);
  const { entry, created, replacedKey } = await (raw ? handleRawUpload : handleUpload)(request, target, request.principal, {
    newUploadKey: options.sweeper.newUploadKey,
    store: options.store,
    tree: options.tree,
    maxBytes: options.maxUploadBytes,
    discardUpload: options.sweeper.discardUpload,
  });
  if (replacedKey) void options.sweeper.sweepNow(); // the replaced bytes
  if (wantsHtmlPage(request.headers.accept)) return reply.redirect(encodePath(parentOf(entry.path), true), 303);
  return reply.status(created ? 201 : 200).send(ok(created ? 'File uploaded' : 'File replaced', { file: entryView(entry) }));
}

async function createFolder(options: FileRoutesOptions, request: FastifyRequest, reply: FastifyReply, directory: SharePath) {
  const principal = request.principal;
  requirePermission(principal, 'uploads', directory.path);
  const { folderName } = parseBody(folderBody, request.body);
  const folder = await options.tree.createFolder(directory.path, validateName(folderName, '/folderName'), principal.user?.id ?? null);
  return reply.status(201).send(ok('Folder created', { folder: entryView(folder) }));
}

async function search(options: FileRoutesOptions, request: FastifyRequest, directory: SharePath) {
  requirePermission(request.principal, 'downloads', directory.path);
  const body = parseBody(searchBody, request.body);
  const found = await options.tree.search(directory.path, body.query, { offset: (body.page - 1) * body.limit, limit: body.limit });
  if (!found) throw notFound(`${directory.path} is not an existing folder`);
  const { total, entries } = found;
  return ok('Search results', { path: directory.path, query: body.query, total, page: body.page, limit: body.limit, files: entries.map(entryView) });
}

async function post(options: FileRoutesOptions, request: FastifyRequest, reply: FastifyReply) {
  const { pathname } = rawPathOf(request);
  const raw = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === 'application/octet-stream';
  if (request.isMultipart() || raw) return upload(options, request, reply, raw);
  const slash = pathname.lastIndexOf('/');
  const action = pathname.slice(slash + 1);
  if (action !== 'folders' && action !== 'search') {
    throw new HttpError(415, 'Uploads are multipart/form-data with a part named "file"; JSON is accepted by /{path}/folders and /{path}/search');
  }
  const directory: SharePath = parseRequestPath(slash === 0 ? '/' : `${pathname.slice(0, slash)}/`);
  if (action === 'folders') return createFolder(options, request, reply, directory);
  return search(options, request, directory);
}

export function postRoute(app: FastifyInstance, options: FileRoutesOptions): void {
  app.post('/*', { schema: postSchema }, (request, reply) => post(options, request, reply));
}
