// Box files: upload (multipart part `file`, or the raw body), file information, deletion, short-lived download
// links, and the stable download URL Vagrant uses.
// The parts: upload-routes.ts and download-routes.ts; file information, deletion and links are here.
import { notFound } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { findPath } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { ARCH_PREFIX, errors, params } from '../http/schemas.ts';
import { fileSchema, messageSchema } from '../records.ts';
import { downloadRoutes } from './download-routes.ts';
import { ARCH_PARAMS, fileRecord, type ArchParams } from './file-record.ts';
import { uploadRoutes } from './upload-routes.ts';

export { fileRecord } from './file-record.ts';

function fileInfoRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Params: ArchParams }>(
    `${ARCH_PREFIX}/file`,
    {
      schema: {
        tags: ['files'],
        summary: 'File information: size, checksums, download count, download URL',
        params: params(...ARCH_PARAMS),
        response: { 200: fileSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      if (!found.file) throw notFound(`No file has been uploaded for architecture '${found.architecture!.name}'`);
      return fileRecord(ctx, request, found, found.file);
    },
  );
}

function deleteFileRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.delete<{ Params: ArchParams }>(
    `${ARCH_PREFIX}/file`,
    {
      schema: {
        tags: ['files'],
        summary: 'Delete the file of an architecture',
        params: params(...ARCH_PARAMS),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const file = found.file;
      if (!file) throw notFound(`No file has been uploaded for architecture '${found.architecture!.name}'`);
      await ctx.pool.transaction(async (tx) => {
        await ctx.cleanup.queue(tx, [file.storage_key]);
        await tx.query(sql.unsafe`delete from files where id = ${file.id}`);
      });
      await ctx.cleanup.deleteNow([file.storage_key]);
      return { message: `File '${file.file_name}' deleted` };
    },
  );
}

function downloadLinkRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.post<{ Params: ArchParams }>(
    `${ARCH_PREFIX}/file/get-download-link`,
    {
      schema: {
        tags: ['files'],
        summary: 'A short-lived signed URL for this file that works without other credentials (download_links.ttl_seconds)',
        params: params(...ARCH_PARAMS),
        response: {
          200: {
            type: 'object',
            properties: { download_url: { type: 'string', format: 'uri' }, expires_at: { type: 'string', format: 'date-time' } },
            required: ['download_url', 'expires_at'],
            additionalProperties: false,
          },
          ...errors(401, 403, 404),
        },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      if (!found.file) throw notFound(`No file has been uploaded for architecture '${found.architecture!.name}'`);
      const { expires, signature } = ctx.downloadLinks.sign(found.file.id, ctx.config.download_links.ttl_seconds);
      const url = new URL(fileRecord(ctx, request, found, found.file).download_url);
      url.searchParams.set('expires', String(expires));
      url.searchParams.set('signature', signature);
      return { download_url: url.toString(), expires_at: new Date(expires * 1000).toISOString() };
    },
  );
}

export async function fileRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  await uploadRoutes(app, ctx);
  fileInfoRoute(app, ctx);
  deleteFileRoute(app, ctx);
  downloadLinkRoute(app, ctx);
  downloadRoutes(app, ctx);
}
