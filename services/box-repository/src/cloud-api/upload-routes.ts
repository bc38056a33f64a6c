// Vagrant Cloud API uploads: `…/upload` hands out a URL the client PUTs the box to (through the service, streamed
// and verified like every upload: files/upload.ts), `…/upload/direct` one it PUTs to the object store itself (s3
// driver: a presigned PUT; local driver: the service's own URL) plus a callback it PUTs with its token once done.
// Both URLs are capabilities (upload-grants.ts). Upload routes answer 200: Packer retries on anything else.
import { conflict, declaredLength, HttpError } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Found } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { assertReplaceAllowed, commitUpload, parseClientChecksum, storeUpload, verifyFinalChecksum, type ClientChecksum } from '../files/upload.ts';
import type { ApiFlavour } from './documents.ts';
import { notArrived, verifyDirectUpload } from './direct-upload.ts';
import { findArchitecture, type ProviderParams } from './provider-routes.ts';
import { directUploadMetrics } from './upload-metrics.ts';
import { alreadyUsed, findGrant, foundOfGrant, issueGrant, spendGrant, useGrant } from './upload-grants.ts';

async function declaredChecksum(ctx: ServiceContext, architectureId: number): Promise<ClientChecksum | undefined> {
  const row = await ctx.pool.one(sql.type(z.object({ type: z.string().nullable(), value: z.string().nullable() }))`
    select declared_checksum_type as type, declared_checksum as value from architectures where id = ${architectureId}`);
  return parseClientChecksum(row.value ?? undefined, row.type ?? undefined);
}

const fileNameOf = (found: Found) => `${found.box!.name}-${found.version!.version_number}-${found.provider!.name}-${found.architecture!.name}.box`;

/** `…/upload` and `…/upload/direct` of one API version. */
export function uploadUrlRoutes(app: FastifyInstance, ctx: ServiceContext, flavour: ApiFlavour & { prefix: string }): void {
  const P = `/box/:org/:box/version/:version/provider/:provider${flavour.v2 ? '/:arch' : ''}/upload`;
  for (const direct of [false, true]) {
    app.get<{ Params: ProviderParams }>(direct ? `${P}/direct` : P, async (request) => {
      const found = await findArchitecture(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      if (found.file && found.version!.status !== 'unreleased') {
        throw conflict(
          `Version ${found.version!.version_number} is ${found.version!.status} and provider '${found.provider!.name}' already has its box file: publish a new version, or delete the provider first`,
        );
      }
      return issueGrant(ctx, request, found, { direct, prefix: flavour.prefix });
    });
  }
}

/** What the upload URLs and callbacks open: in a scope whose bodies are never parsed (Packer sends the box as application/json). */
export async function uploadTargetRoutes(scope: FastifyInstance, ctx: ServiceContext): Promise<void> {
  const maxBytes = ctx.config.uploads.max_bytes;
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // A refused upload closes the connection rather than leave the client sending gigabytes nobody reads.
  scope.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode >= 400) reply.header('connection', 'close');
  });
  const metrics = directUploadMetrics(scope.metrics);
  const tokenParams = { type: 'object', properties: { token: { type: 'string', maxLength: 100 } }, required: ['token'] } as const;

  scope.put<{ Params: { token: string } }>('/uploads/:token', { schema: { params: tokenParams } }, async (request, reply) => {
    const grant = await findGrant(ctx, request.params.token);
    if (grant.used_at !== null) throw alreadyUsed(grant);
    if (grant.expired)
      throw new HttpError(410, 'This upload URL has expired (uploads.upload_url_ttl_seconds): ask for a new one (run the publish or upload command again)');
    if (grant.storage_key) throw new HttpError(409, 'This URL takes no bytes: PUT the box to the object-store URL handed out with it');
    const found = await foundOfGrant(ctx, request, grant, false);
    assertReplaceAllowed(found.version!.status, found.file !== undefined, false, found.architecture!.name);
    const declared = declaredLength(request.headers);
    if (declared !== undefined && declared > maxBytes)
      throw new HttpError(413, `The upload (${declared} bytes) is larger than the limit of ${maxBytes} bytes (uploads.max_bytes); nothing was stored`);
    const checksum = await declaredChecksum(ctx, found.architecture!.id);
    try {
      const stored = await storeUpload(ctx, { source: request.raw, checksum, ...(declared !== undefined ? { size: declared } : {}) });
      await commitUpload(
        ctx,
        found,
        stored,
        { fileName: fileNameOf(found), checksum: verifyFinalChecksum(stored, checksum), replace: false, within: useGrant(grant) },
        request.log,
      );
    } catch (error) {
      // Bytes that are wrong stay wrong: the URL is spent and its callback says why. A cut upload keeps it.
      if (error instanceof HttpError && (error.statusCode === 422 || error.statusCode === 413)) await spendGrant(ctx, grant, error.message);
      throw error;
    }
    return reply.status(200).send({ success: true });
  });

  scope.put<{ Params: { token: string } }>('/uploads/:token/callback', { schema: { params: tokenParams } }, async (request) => {
    const grant = await findGrant(ctx, request.params.token);
    const found = await foundOfGrant(ctx, request, grant, true);
    requireBoxManager(found, found.box!, found.org.name);
    if (grant.outcome === 'committed') return { success: true }; // a retried callback: the file is there
    if (grant.used_at !== null) throw alreadyUsed(grant);
    if (!grant.storage_key) throw notArrived(); // the service's own URL commits as the bytes arrive
    if (grant.callback_expired)
      throw new HttpError(410, "This upload's callback window has ended and its bytes were dropped: run the publish or upload command again");
    const checksum = await declaredChecksum(ctx, found.architecture!.id);
    let stored;
    try {
      stored = await verifyDirectUpload(ctx, grant, checksum);
    } catch (error) {
      if (error instanceof HttpError && error.statusCode === 413) metrics.failed('too_large');
      if (error instanceof HttpError && error.statusCode === 422 && error.message.startsWith('Checksum mismatch')) metrics.failed('checksum_mismatch');
      throw error;
    }
    await commitUpload(
      ctx,
      found,
      stored,
      { fileName: fileNameOf(found), checksum: verifyFinalChecksum(stored, checksum), replace: false, within: useGrant(grant) },
      request.log,
    );
    metrics.stored(stored.size);
    return { success: true };
  });
}
