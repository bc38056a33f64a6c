// The two upload routes: multipart (part `file`) and the raw body. Each lives in its own scope: its own body
// parser, and a refused upload closes the connection rather than leave the client sending gigabytes nobody reads.
import multipart from '@fastify/multipart';
import { declaredLength, HttpError, unprocessable } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { findPath, type Found } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { multipartParts } from '../http/multipart.ts';
import { ARCH_PREFIX, errors, params } from '../http/schemas.ts';
import { fileSchema, type BoxFile } from '../records.ts';
import { ARCH_PARAMS, fileRecord, type ArchParams } from './file-record.ts';
import {
  assertReplaceAllowed,
  checkFileName,
  CHECKSUM_TYPES,
  commitUpload,
  discardStoredUpload,
  parseClientChecksum,
  receiveUpload,
  storeUpload,
  verifyFinalChecksum,
  type StoredUpload,
} from './upload.ts';

type UploadQuery = { checksum?: string; checksum_type?: string; replace?: boolean; file_name?: string };
type UploadRequest = FastifyRequest<{ Params: ArchParams; Querystring: UploadQuery }>;
const DEFAULT_FILE_NAME = 'vagrant.box';

const uploadQuery = {
  type: 'object',
  properties: {
    checksum: { type: 'string', description: 'Hex digest the upload must have; refused with 422 and nothing stored otherwise.' },
    checksum_type: { type: 'string', description: `One of ${CHECKSUM_TYPES.join(', ')} (default sha256).` },
    replace: { type: 'boolean', default: false, description: 'Replace the file of a released (active or revoked) version.' },
    file_name: { type: 'string', description: "Name of the file (default: the part's file name, X-File-Name, or vagrant.box)." },
    access_token: { type: 'string', description: 'A service-account key or session token, for clients that cannot send headers.' },
  },
  additionalProperties: false,
} as const;

/** Everything checked before a byte of the body is read. */
async function prepareUpload(ctx: ServiceContext, request: UploadRequest) {
  const found = await findPath(ctx, request, request.params);
  requireBoxManager(found, found.box!, found.org.name);
  assertReplaceAllowed(found.version!.status, found.file !== undefined, request.query.replace ?? false, found.architecture!.name);
  return found;
}

const respond = (ctx: ServiceContext, request: FastifyRequest, reply: FastifyReply, found: Found, result: { file: BoxFile; replaced: boolean }) =>
  reply.status(result.replaced ? 200 : 201).send(fileRecord(ctx, request, found, result.file));

const baseName = (name: string) => name.split(/[\\/]/).pop() ?? '';

const unexpectedFilePart = (name: string) =>
  unprocessable('Unexpected file part', [
    { pointer: `/${name}`, rule: 'additionalProperties', params: {}, detail: 'only one file part, named `file`, is accepted' },
  ]);

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

function closeConnectionOnRefusal(scope: FastifyInstance): void {
  scope.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode >= 400) reply.header('connection', 'close');
  });
}

/** Reads the multipart body and commits the file it holds; nothing is committed until the whole body was read. */
async function receiveMultipart(ctx: ServiceContext, request: UploadRequest, found: Found) {
  const fields: Record<string, string> = {};
  let stored: StoredUpload | undefined;
  let partFileName = '';
  // A later part or a parser limit can still refuse the request, and then the stored bytes are dropped, so the
  // answer always tells whether the box was stored.
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
    if (!stored)
      throw unprocessable('No file uploaded', [
        { pointer: '/file', rule: 'required', params: { missingProperty: 'file' }, detail: 'the multipart part `file` is missing' },
      ]);
    const fileName = checkFileName(request.query.file_name ?? fields.file_name ?? (partFileName || DEFAULT_FILE_NAME), '/file_name');
    const checksum = verifyFinalChecksum(
      stored,
      parseClientChecksum(request.query.checksum ?? fields.checksum, request.query.checksum_type ?? fields.checksum_type),
    );
    const toCommit = stored;
    stored = undefined; // from here commitUpload owns the bytes: the row takes them, or it drops them
    return await commitUpload(ctx, found, toCommit, { fileName, checksum, replace: request.query.replace ?? false }, request.log);
  } finally {
    if (stored) await discardStoredUpload(ctx, stored);
  }
}

async function multipartUploadRoute(scope: FastifyInstance, ctx: ServiceContext): Promise<void> {
  closeConnectionOnRefusal(scope);
  await scope.register(multipart, { limits: { fileSize: ctx.config.uploads.max_bytes + 1, files: 2, fields: 20, fieldSize: 4096, parts: 25 } });

  scope.post<{ Params: ArchParams; Querystring: UploadQuery }>(
    `${ARCH_PREFIX}/file`,
    {
      schema: {
        tags: ['files'],
        summary:
          'Upload the box file (multipart/form-data, part `file`; fields file_name, checksum and checksum_type — a checksum of a type other than sha256 must come before the file part, or in the query)',
        consumes: ['multipart/form-data'],
        params: params(...ARCH_PARAMS),
        querystring: uploadQuery,
        response: { 200: fileSchema, 201: fileSchema, ...errors(400, 401, 403, 404, 408, 409, 413, 415, 422, 507) },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart())
        throw new HttpError(415, 'Send multipart/form-data with the box in the part `file` (or POST the raw body to .../file/upload)');
      const found = await prepareUpload(ctx, request);
      return respond(ctx, request, reply, found, await receiveMultipart(ctx, request, found));
    },
  );
}

async function rawUploadRoute(scope: FastifyInstance, ctx: ServiceContext): Promise<void> {
  const maxBytes = ctx.config.uploads.max_bytes;
  closeConnectionOnRefusal(scope);
  // Any content type: the body is streamed from the socket by the handler, never parsed or buffered.
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (_request, _payload, done) => done(null));

  scope.post<{ Params: ArchParams; Querystring: UploadQuery }>(
    `${ARCH_PREFIX}/file/upload`,
    {
      schema: {
        tags: ['files'],
        summary: 'Upload the box file as the raw request body (Content-Type application/octet-stream, X-File-Name)',
        params: params(...ARCH_PARAMS),
        querystring: uploadQuery,
        headers: { type: 'object', properties: { 'x-file-name': { type: 'string' }, 'x-checksum': { type: 'string' }, 'x-checksum-type': { type: 'string' } } },
        response: { 200: fileSchema, 201: fileSchema, ...errors(400, 401, 403, 404, 408, 409, 413, 422, 507) },
      },
    },
    async (request, reply) => {
      const found = await prepareUpload(ctx, request);
      const header = (name: string) => {
        const value = request.headers[name];
        return typeof value === 'string' && value !== '' ? value : undefined;
      };
      const declared = declaredLength(request.headers);
      if (declared !== undefined && declared > maxBytes) {
        throw new HttpError(413, `The upload (${declared} bytes) is larger than the limit of ${maxBytes} bytes (uploads.max_bytes); nothing was stored`);
      }
      const fileName = checkFileName(
        request.query.file_name ?? (baseName(header('x-file-name') ?? '') || DEFAULT_FILE_NAME),
        header('x-file-name') ? '/headers/x-file-name' : '/query/file_name',
      );
      const checksum = parseClientChecksum(request.query.checksum ?? header('x-checksum'), request.query.checksum_type ?? header('x-checksum-type'));
      const result = await receiveUpload(
        ctx,
        found,
        { source: request.raw, fileName, checksum, replace: request.query.replace ?? false, ...(declared !== undefined ? { size: declared } : {}) },
        request.log,
      );
      return respond(ctx, request, reply, found, result);
    },
  );
}

export async function uploadRoutes(app: FastifyInstance, ctx: ServiceContext): Promise<void> {
  await app.register((scope) => multipartUploadRoute(scope, ctx));
  await app.register((scope) => rawUploadRoute(scope, ctx));
}
