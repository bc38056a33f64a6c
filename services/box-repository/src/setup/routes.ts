// Setup: where it stands (GET /api/setup/status, public: nothing in it is secret — any TLS client sees the
// certificate) and the certificate upload (POST /api/setup/upload-ssl, global admins only): multipart parts
// `cert` and `key` (file parts or plain fields), checked as a matching pair that can serve TLS now, stored for
// every replica, and served by the running HTTPS listener from the next handshake on.
import multipart from '@fastify/multipart';
import { CertificatePairError, checkCertificatePair, forbidden, HttpError, unprocessable } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { requirePrincipal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { multipartParts } from '../http/multipart.ts';
import { errors } from '../http/schemas.ts';
import { saveUploadedCertificate } from './certificate-store.ts';

/** A certificate chain or a key is a few KiB; a generous ceiling that still refuses anything else early. */
const MAX_PART_BYTES = 64 * 1024;
const PARTS = ['cert', 'key'] as const;

const certificateSchema = {
  type: 'object',
  properties: {
    source: { type: 'string', enum: ['configured', 'uploaded', 'self-signed'] },
    subject: { type: 'string' },
    issuer: { type: 'string' },
    valid_from: { type: 'string', format: 'date-time' },
    valid_to: { type: 'string', format: 'date-time' },
    fingerprint_sha256: { type: 'string' },
    subject_alt_name: { type: ['string', 'null'] },
  },
  required: ['source', 'subject', 'issuer', 'valid_from', 'valid_to', 'fingerprint_sha256', 'subject_alt_name'],
  additionalProperties: false,
} as const;

const setupStatusSchema = {
  type: 'object',
  properties: {
    admin_exists: { type: 'boolean' },
    https: { type: 'boolean', description: 'Whether an HTTPS listener runs (boxyard.api_listen_port_encrypted or server.tls.enabled)' },
    certificate: { anyOf: [{ type: 'null' }, certificateSchema] },
    redirects_to_https: {
      type: 'boolean',
      description: 'Whether the unencrypted listener sends clients to HTTPS (a configured or uploaded certificate is served)',
    },
    listeners: {
      type: 'object',
      properties: { encrypted_port: { type: ['integer', 'null'] }, unencrypted_port: { type: ['integer', 'null'] } },
      required: ['encrypted_port', 'unencrypted_port'],
      additionalProperties: false,
    },
  },
  required: ['admin_exists', 'https', 'certificate', 'redirects_to_https', 'listeners'],
  additionalProperties: false,
} as const;

const uploadResultSchema = {
  type: 'object',
  properties: {
    message: { type: 'string' },
    applied: { type: 'boolean', description: 'Whether a running HTTPS listener serves it now' },
    certificate: certificateSchema,
  },
  required: ['message', 'applied', 'certificate'],
  additionalProperties: false,
} as const;

function describeCertificate(ctx: ServiceContext) {
  if (!ctx.tls) return null;
  const info = ctx.tls.info();
  return {
    source: ctx.tls.source(),
    subject: info.subject,
    issuer: info.issuer,
    valid_from: info.validFrom.toISOString(),
    valid_to: info.validTo.toISOString(),
    fingerprint_sha256: info.fingerprint256,
    subject_alt_name: info.subjectAltName ?? null,
  };
}

const missing = (name: string) => ({
  pointer: `/${name}`,
  rule: 'required',
  params: { missingProperty: name },
  detail: `the multipart part \`${name}\` (PEM) is missing`,
});

export async function setupRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  app.get(
    '/api/setup/status',
    {
      schema: {
        tags: ['setup'],
        summary: 'Where setup stands: the first admin, HTTPS, the certificate served and the listeners',
        response: { 200: setupStatusSchema },
      },
    },
    async () => ({
      admin_exists: await ctx.pool.exists(sql.type(z.object({ x: z.number() }))`select 1 as x from users where role = 'admin' and disabled_at is null`),
      https: ctx.tls !== undefined,
      certificate: describeCertificate(ctx),
      redirects_to_https: ctx.listening.unencryptedPort !== undefined && ctx.listening.encryptedPort !== undefined && (ctx.tls?.isConfigured() ?? false),
      listeners: { encrypted_port: ctx.listening.encryptedPort ?? null, unencrypted_port: ctx.listening.unencryptedPort ?? null },
    }),
  );

  await app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: MAX_PART_BYTES, fieldSize: MAX_PART_BYTES, files: 4, fields: 4, parts: 4 } });
    scope.post(
      '/api/setup/upload-ssl',
      {
        schema: {
          tags: ['setup'],
          summary: 'Upload the HTTPS certificate (part `cert`, PEM, chain after the leaf) and its private key (part `key`, PEM); admins only',
          consumes: ['multipart/form-data'],
          response: { 200: uploadResultSchema, ...errors(400, 401, 403, 409, 413, 415, 422) },
        },
      },
      async (request) => {
        const principal = await requirePrincipal(ctx, request);
        if (principal.kind !== 'user' || !principal.isAdmin) throw forbidden('Only administrators may change the certificate');
        if (!request.isMultipart()) throw new HttpError(415, 'Send multipart/form-data with the parts `cert` and `key` (PEM)');
        if (ctx.config.server.tls.cert || ctx.config.server.tls.key) {
          throw new HttpError(409, 'The certificate comes from server.tls.cert and server.tls.key in the configuration; change those files instead');
        }
        const received: Partial<Record<(typeof PARTS)[number], string>> = {};
        for await (const part of multipartParts(request)) {
          const name = part.fieldname as (typeof PARTS)[number];
          if (!PARTS.includes(name) || received[name] !== undefined) {
            if (part.type === 'file') part.file.resume();
            throw unprocessable('Unexpected part', [
              { pointer: `/${part.fieldname}`, rule: 'additionalProperties', params: {}, detail: 'only the parts `cert` and `key`, once each, are accepted' },
            ]);
          }
          // toBuffer() refuses a file part over the limit with 413 (the plugin's error); a field over it would be
          // cut short silently, so it is refused the same way.
          if (part.type === 'field' && part.valueTruncated) throw new HttpError(413, `The part \`${name}\` is larger than ${MAX_PART_BYTES} bytes`);
          received[name] = part.type === 'file' ? (await part.toBuffer()).toString('utf8') : String(part.value);
        }
        const absent = PARTS.filter((name) => !received[name]);
        if (absent.length > 0) throw unprocessable('The certificate and its key are both needed', absent.map(missing));
        const pair = { cert: received.cert!, key: received.key! };
        let info;
        try {
          info = checkCertificatePair(pair.cert, pair.key);
        } catch (error) {
          if (!(error instanceof CertificatePairError)) throw error;
          const rule = { cert: 'certificate', key: 'private_key', pair: 'key_pair' }[error.part];
          throw unprocessable('The certificate and key cannot be used', [
            { pointer: `/${error.part === 'pair' ? 'key' : error.part}`, rule, params: {}, detail: error.message },
          ]);
        }
        await saveUploadedCertificate(ctx.pool, { ...pair, fingerprint: info.fingerprint256, uploadedBy: principal.username }, ctx.config.session.secret);
        ctx.tls?.use(pair, 'uploaded');
        request.log.info({ fingerprint: info.fingerprint256, subject: info.subject, by: principal.username }, 'TLS certificate uploaded');
        const applied = ctx.tls !== undefined;
        return {
          message: applied
            ? 'Certificate stored and served from now on'
            : 'Certificate stored; it is served once an HTTPS listener is configured (boxyard.api_listen_port_encrypted)',
          applied,
          certificate: describeCertificate(ctx) ?? {
            source: 'uploaded' as const,
            subject: info.subject,
            issuer: info.issuer,
            valid_from: info.validFrom.toISOString(),
            valid_to: info.validTo.toISOString(),
            fingerprint_sha256: info.fingerprint256,
            subject_alt_name: info.subjectAltName ?? null,
          },
        };
      },
    );
  });
}
