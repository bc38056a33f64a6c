// Box files: upload (multipart part `file`, or the raw body), file information, deletion, short-lived download
// links, and the stable download URL Vagrant uses.
import multipart from '@fastify/multipart';
import { declaredLength, HttpError, notFound, unauthorized, unprocessable } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { sql } from 'slonik';
import { findPath, type Found, type PathParams } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf, downloadUrl } from '../http/base-url.ts';
import { multipartParts } from '../http/multipart.ts';
import { ARCH_PREFIX, errors, params } from '../http/schemas.ts';
import { fileSchema, messageSchema, toFileRecord, type BoxFile } from '../records.ts';
import { serveFile } from './serve-file.ts';
import {
  assertReplaceAllowed, checkFileName, CHECKSUM_TYPES, commitUpload, discardStoredUpload, parseClientChecksum, receiveUpload, storeUpload, verifyFinalChecksum, type StoredUpload,
} from './upload.ts';

type ArchParams = { org: string; box: string; version: string; provider: string; arch: string };
type UploadQuery = { checksum?: string; checksum_type?: string; replace?: boolean; file_name?: string };
const A = ['org', 'box', 'version', 'provider', 'arch'] as const;
const DEFAULT_FILE_NAME = 'vagrant.box';

const uploadQuery = {
  type: 'object',
  properties: {
    checksum: { type: 'string', description: 'Hex digest the upload must have; refused with 422 and nothing stored otherwise.' },
    checksum_type: { type: 'string', description: `One of ${CHECKSUM_TYPES.join(', ')} (default sha256).` },
    replace: { type: 'boolean', default: false, description: 'Replace the file of a released (active or revoked) version.' },
    file_name: { type: 'string', description: 'Name of the file (default: the part\'s file name, X-File-Name, or vagrant.box).' },
    access_token: { type: 'string', description: 'A service-account key or session token, for clients that cannot send headers.' },
  },
  additionalProperties: false,
} as const;

export function fileRecord(ctx: ServiceContext, request: FastifyRequest, found: Found, file: BoxFile) {
  return toFileRecord(file, downloadUrl(baseUrlOf(ctx, request), {
    org: found.org.name, box: found.box!.name, version: found.version!.version_number, provider: found.provider!.name, arch: found.architecture!.name, fileName: file.file_name,
  }));
}

/** Everything checked before a byte of the body is read. */
async function prepareUpload(ctx: ServiceContext, request: FastifyRequest<{ Params: ArchParams; Querystring: UploadQuery }>) {
  const found = await findPath(ctx, request, request.params);
  requireBoxManager(found, found.box!, found.org.name);
  assertReplaceAllowed(found.version!.status, found.file !== undefined, request.query.replace ?? false, found.architecture!.name);
  return found;
}

const baseName = (name: string) => name.split(/[\\/]/).pop() ?? '';

const unexpectedFilePart = (name: string) =>
  unprocessable('Unexpected file part', [{ pointer: `/${name}`, rule: 'additionalProperties', params: {}, detail: 'only one file part, named `file`, is accepted' }]);

/**
 * The parser's limit of one file part answers a second one with 413 (as if something were too large); the
 * caller sent a part too many, which is a 422 like any other unexpected part.
 */
async function* onlyOneFilePart<T>(parts: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* parts;
  } catch (error) {
    if ((error as { code?: string }).code === 'FST_FILES_LIMIT') throw unexpectedFilePart('file');
    throw error;
  }
}

export async function fileRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;
  const maxBytes = ctx.config.uploads.max_bytes;

  const respond = (request: FastifyRequest, reply: FastifyReply, found: Found, result: { file: BoxFile; replaced: boolean }) =>
    reply.status(result.replaced ? 200 : 201).send(fileRecord(ctx, request, found, result.file));

  // Uploads live in their own scopes: their own body parsers, and a refused upload closes the connection rather
  // than leave the client sending gigabytes nobody reads.
  await app.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply) => {
      if (reply.statusCode >= 400) reply.header('connection', 'close');
    });
    await scope.register(multipart, { limits: { fileSize: maxBytes + 1, files: 2, fields: 20, fieldSize: 4096, parts: 25 } });

    scope.post<{ Params: ArchParams; Querystring: UploadQuery }>(`${ARCH_PREFIX}/file`, {
      schema: {
        tags: ['files'], summary: 'Upload the box file (multipart/form-data, part `file`; fields file_name, checksum and checksum_type — a checksum of a type other than sha256 must come before the file part, or in the query)',
        consumes: ['multipart/form-data'], params: params(...A), querystring: uploadQuery,
        response: { 200: fileSchema, 201: fileSchema, ...errors(400, 401, 403, 404, 408, 409, 413, 415, 422, 507) },
      },
    }, async (request, reply) => {
      if (!request.isMultipart()) throw new HttpError(415, 'Send multipart/form-data with the box in the part `file` (or POST the raw body to .../file/upload)');
      const found = await prepareUpload(ctx, request);
      const fields: Record<string, string> = {};
      let stored: StoredUpload | undefined;
      let partFileName = '';
      // Nothing is committed until the whole body was read: a later part or a parser limit can still refuse the
      // request, and then the stored bytes are dropped, so the answer always tells whether the box was stored.
      try {
        for await (const part of onlyOneFilePart(multipartParts(request))) {
          if (part.type === 'field') {
            fields[part.fieldname.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = String(part.value);
            continue;
          }
          if (part.fieldname !== 'file' || stored) {
            part.file.resume();
            throw unexpectedFilePart(part.fieldname);
          }
          partFileName = baseName(part.filename);
          const checksum = parseClientChecksum(request.query.checksum ?? fields.checksum, request.query.checksum_type ?? fields.checksum_type);
          stored = await storeUpload(ctx, { source: part.file as Readable, checksum });
        }
        if (!stored) throw unprocessable('No file uploaded', [{ pointer: '/file', rule: 'required', params: { missingProperty: 'file' }, detail: 'the multipart part `file` is missing' }]);
        const fileName = checkFileName(request.query.file_name ?? fields.file_name ?? (partFileName || DEFAULT_FILE_NAME), '/file_name');
        const checksum = verifyFinalChecksum(stored, parseClientChecksum(request.query.checksum ?? fields.checksum, request.query.checksum_type ?? fields.checksum_type));
        const toCommit = stored;
        stored = undefined; // from here commitUpload owns the bytes: the row takes them, or it drops them
        const result = await commitUpload(ctx, found, toCommit, { fileName, checksum, replace: request.query.replace ?? false }, request.log);
        return respond(request, reply, found, result);
      } finally {
        if (stored) await discardStoredUpload(ctx, stored);
      }
    });
  });

  await app.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply) => {
      if (reply.statusCode >= 400) reply.header('connection', 'close');
    });
    // Any content type: the body is streamed from the socket by the handler, never parsed or buffered.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));

    scope.post<{ Params: ArchParams; Querystring: UploadQuery }>(`${ARCH_PREFIX}/file/upload`, {
      schema: {
        tags: ['files'], summary: 'Upload the box file as the raw request body (Content-Type application/octet-stream, X-File-Name)',
        params: params(...A), querystring: uploadQuery,
        headers: { type: 'object', properties: { 'x-file-name': { type: 'string' }, 'x-checksum': { type: 'string' }, 'x-checksum-type': { type: 'string' } } },
        response: { 200: fileSchema, 201: fileSchema, ...errors(400, 401, 403, 404, 408, 409, 413, 422, 507) },
      },
    }, async (request, reply) => {
      const found = await prepareUpload(ctx, request);
      const header = (name: string) => {
        const value = request.headers[name];
        return typeof value === 'string' && value !== '' ? value : undefined;
      };
      const declared = declaredLength(request.headers);
      if (declared !== undefined && declared > maxBytes) {
        throw new HttpError(413, `The upload (${declared} bytes) is larger than the limit of ${maxBytes} bytes (uploads.max_bytes); nothing was stored`);
      }
      const fileName = checkFileName(request.query.file_name ?? (baseName(header('x-file-name') ?? '') || DEFAULT_FILE_NAME), header('x-file-name') ? '/headers/x-file-name' : '/query/file_name');
      const checksum = parseClientChecksum(request.query.checksum ?? header('x-checksum'), request.query.checksum_type ?? header('x-checksum-type'));
      const result = await receiveUpload(ctx, found, { source: request.raw, fileName, checksum, replace: request.query.replace ?? false, ...(declared !== undefined ? { size: declared } : {}) }, request.log);
      return respond(request, reply, found, result);
    });
  });

  app.get<{ Params: ArchParams }>(`${ARCH_PREFIX}/file`, {
    schema: { tags: ['files'], summary: 'File information: size, checksums, download count, download URL', params: params(...A), response: { 200: fileSchema, ...errors(401, 403, 404) } },
  }, async (request) => {
    const found = await findPath(ctx, request, request.params);
    if (!found.file) throw notFound(`No file has been uploaded for architecture '${found.architecture!.name}'`);
    return fileRecord(ctx, request, found, found.file);
  });

  app.delete<{ Params: ArchParams }>(`${ARCH_PREFIX}/file`, {
    schema: { tags: ['files'], summary: 'Delete the file of an architecture', params: params(...A), response: { 200: messageSchema, ...errors(401, 403, 404) } },
  }, async (request) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const file = found.file;
    if (!file) throw notFound(`No file has been uploaded for architecture '${found.architecture!.name}'`);
    await pool.transaction(async (tx) => {
      await ctx.cleanup.queue(tx, [file.storage_key]);
      await tx.query(sql.unsafe`delete from files where id = ${file.id}`);
    });
    await ctx.cleanup.deleteNow([file.storage_key]);
    return { message: `File '${file.file_name}' deleted` };
  });

  app.post<{ Params: ArchParams }>(`${ARCH_PREFIX}/file/get-download-link`, {
    schema: {
      tags: ['files'], summary: 'A short-lived signed URL for this file that works without other credentials (download_links.ttl_seconds)',
      params: params(...A),
      response: {
        200: { type: 'object', properties: { download_url: { type: 'string', format: 'uri' }, expires_at: { type: 'string', format: 'date-time' } }, required: ['download_url', 'expires_at'], additionalProperties: false },
        ...errors(401, 403, 404),
      },
    },
  }, async (request) => {
    const found = await findPath(ctx, request, request.params);
    if (!found.file) throw notFound(`No file has been uploaded for architecture '${found.architecture!.name}'`);
    const { expires, signature } = ctx.downloadLinks.sign(found.file.id, ctx.config.download_links.ttl_seconds);
    const url = new URL(fileRecord(ctx, request, found, found.file).download_url);
    url.searchParams.set('expires', String(expires));
    url.searchParams.set('signature', signature);
    return { download_url: url.toString(), expires_at: new Date(expires * 1000).toISOString() };
  });

  /** The file the path names, or 404 (also when the URL's file name is not the stored one). */
  const fileAt = (found: Found, fileName: string | undefined): BoxFile => {
    const file = found.file;
    if (!file || (fileName !== undefined && fileName !== file.file_name)) {
      throw notFound(fileName ? `File '${fileName}' not found` : 'No file has been uploaded for this architecture');
    }
    return file;
  };

  const download = async (request: FastifyRequest<{ Params: PathParams & { file_name?: string }; Querystring: { expires?: string; signature?: string } }>, reply: FastifyReply) => {
    const { expires, signature } = request.query;
    const serve = (found: Found, file: BoxFile) => {
      const isPublic = found.org.is_public && found.box!.is_public && found.box!.published && found.version!.status === 'active';
      return serveFile(ctx, request, reply, file, { isPublic });
    };
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
      linkVerdict = file && (request.params.file_name === undefined || request.params.file_name === file.file_name) ? ctx.downloadLinks.check(file.id, expires, signature) : 'invalid';
      if (linkVerdict === 'valid') return serve(unchecked!, file!);
    }
    let found: Found;
    try {
      found = await findPath(ctx, request, request.params);
    } catch (error) {
      // Only the holder of a genuine link hears that it expired.
      if (linkVerdict === 'expired' && error instanceof HttpError && [401, 403, 404].includes(error.statusCode)) throw unauthorized('Download link expired');
      throw error;
    }
    return serve(found, fileAt(found, request.params.file_name));
  };
  const downloadSchema = (summary: string, names: readonly string[]) => ({
    tags: ['files'], summary, params: params(...names),
    querystring: { type: 'object', properties: { expires: { type: 'string' }, signature: { type: 'string' }, access_token: { type: 'string' } } },
    response: {
      200: { description: 'The box file', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      206: { description: 'The requested range of the box file (Range)', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      304: { description: 'Not modified (If-None-Match matched the ETag)' },
      ...errors(401, 403, 404, 416),
    },
  });
  // GET and HEAD in one route: HEAD answers the same headers (Content-Length included) without touching storage.
  app.route({
    method: ['GET', 'HEAD'], url: '/:org/boxes/:box/versions/:version/providers/:provider/:arch/:file_name',
    schema: downloadSchema('Download a box file (stable URL; Range, HEAD, ETag); private boxes need credentials or a signed link', [...A, 'file_name']),
    handler: download,
  });
  app.route({ method: ['GET', 'HEAD'], url: `${ARCH_PREFIX}/file/download`, schema: downloadSchema('Download the box file of an architecture', A), handler: download });
}
