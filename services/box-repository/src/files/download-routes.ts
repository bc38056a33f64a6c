// Downloads: the stable URL Vagrant uses (…/:arch/:file_name) and …/file/download, both GET and HEAD, with the
// read rules or a signed download link.
import { HttpError, notFound, unauthorized } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findPath, type Found, type PathParams } from '../access/hierarchy.ts';
import type { ServiceContext } from '../context.ts';
import { ARCH_PREFIX, errors, params } from '../http/schemas.ts';
import type { BoxFile } from '../records.ts';
import { ARCH_PARAMS } from './file-record.ts';
import { serveFile } from './serve-file.ts';

type DownloadRequest = FastifyRequest<{ Params: PathParams & { file_name?: string }; Querystring: { expires?: string; signature?: string } }>;

/** The file the path names, or 404 (also when the URL's file name is not the stored one). */
function fileAt(found: Found, fileName: string | undefined): BoxFile {
  const file = found.file;
  if (!file || (fileName !== undefined && fileName !== file.file_name)) {
    throw notFound(fileName ? `File '${fileName}' not found` : 'No file has been uploaded for this architecture');
  }
  return file;
}

function serve(ctx: ServiceContext, request: DownloadRequest, reply: FastifyReply, found: Found, file: BoxFile) {
  const isPublic = found.org.is_public && found.box!.is_public && found.box!.published && found.version!.status === 'active';
  return serveFile(ctx, request, reply, file, { isPublic });
}

async function download(ctx: ServiceContext, request: DownloadRequest, reply: FastifyReply) {
  const { expires, signature } = request.query;
  let linkVerdict: 'valid' | 'expired' | 'invalid' | undefined;
  if (expires !== undefined || signature !== undefined) {
    // A signed link is verified before anything is said about the path: the signature covers the file's id, so
    // the path is looked up without the read rules, but only a genuine link is served from that lookup. Any
    // other answer comes from the read rules below, as for a request without a link, so a forged link learns
    // nothing about private names.
    const unchecked = await findPath(ctx, request, request.params, { checkRead: false }).catch((error: unknown) => {
      if (error instanceof HttpError && error.statusCode === 404) return undefined;
      throw error;
    });
    const file = unchecked?.file;
    linkVerdict =
      file && (request.params.file_name === undefined || request.params.file_name === file.file_name)
        ? ctx.downloadLinks.check(file.id, expires, signature)
        : 'invalid';
    if (linkVerdict === 'valid') return serve(ctx, request, reply, unchecked!, file!);
  }
  let found: Found;
  try {
    found = await findPath(ctx, request, request.params);
  } catch (error) {
    // Only the holder of a genuine link hears that it expired.
    if (linkVerdict === 'expired' && error instanceof HttpError && [401, 403, 404].includes(error.statusCode)) throw unauthorized('Download link expired');
    throw error;
  }
  return serve(ctx, request, reply, found, fileAt(found, request.params.file_name));
}

const downloadSchema = (summary: string, names: readonly string[]) => ({
  tags: ['files'],
  summary,
  params: params(...names),
  querystring: { type: 'object', properties: { expires: { type: 'string' }, signature: { type: 'string' }, access_token: { type: 'string' } } },
  response: {
    200: { description: 'The box file', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
    206: {
      description: 'The requested range of the box file (Range)',
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    },
    304: { description: 'Not modified (If-None-Match matched the ETag)' },
    ...errors(401, 403, 404, 416),
  },
});

export function downloadRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const handler = (request: DownloadRequest, reply: FastifyReply) => download(ctx, request, reply);
  // GET and HEAD in one route: HEAD answers the same headers (Content-Length included) without touching storage.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/:org/boxes/:box/versions/:version/providers/:provider/:arch/:file_name',
    schema: downloadSchema('Download a box file (stable URL; Range, HEAD, ETag); private boxes need credentials or a signed link', [
      ...ARCH_PARAMS,
      'file_name',
    ]),
    handler,
  });
  app.route({
    method: ['GET', 'HEAD'],
    url: `${ARCH_PREFIX}/file/download`,
    schema: downloadSchema('Download the box file of an architecture', ARCH_PARAMS),
    handler,
  });
}
