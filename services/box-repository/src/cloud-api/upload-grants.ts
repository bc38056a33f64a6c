// Upload URLs of the publishing API as capabilities: a random secret in the URL (the clients PUT the bytes with
// curl or Go's HTTP client and send no credentials), kept as its sha256, bound to one architecture's file, good for
// starting an upload until `uploads.upload_url_ttl_seconds` after it was handed out, and for one upload: the
// transaction that commits the file marks it used, and a callback that finds the bytes wrong uses it up too.
// It carries no other right: the routes it opens take the box file of its architecture and nothing else.
// A direct upload on the s3 driver gets a presigned PUT for a fresh key instead; the object only becomes the
// architecture's file once the callback (with the caller's token) has verified it. Until then the key is
// registered for the clean-up sweep, due when the callback window ends.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { HttpError, notFound } from '@boxyard/kit';
import type { FastifyRequest } from 'fastify';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { findPath, type Found } from '../access/hierarchy.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf } from '../http/base-url.ts';
import { int8 } from '../records.ts';

const grantRow = z.object({
  architecture_id: int8,
  direct: z.boolean(),
  storage_key: z.string().nullable(),
  expired: z.boolean(),
  callback_expired: z.boolean(),
  used_at: z.unknown().nullable(),
  outcome: z.string().nullable(),
});
export type Grant = z.output<typeof grantRow> & { tokenSha256: string };

const digest = (token: string) => createHash('sha256').update(token).digest('hex');
/**
 * Hands out an upload URL (and for a direct upload its callback) under `prefix` (/api/v1 or /api/v2): the gem
 * sends the callback to the path under its own API base.
 */
export async function issueGrant(
  ctx: ServiceContext,
  request: FastifyRequest,
  found: Found,
  options: { direct: boolean; prefix: string },
): Promise<{ upload_path: string; callback?: string }> {
  const token = randomBytes(32).toString('base64url');
  const ttl = ctx.config.uploads.upload_url_ttl_seconds;
  const callbackWindow = ttl + ctx.config.uploads.abandoned_after_seconds;
  const base = baseUrlOf(ctx, request);
  const { direct } = options;
  const presign = direct && ctx.store.driver === 's3';
  const storageKey = presign ? `boxes/${randomUUID()}` : null;
  await ctx.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`delete from upload_grants where callback_until < now() - interval '1 day'`);
    await tx.query(sql.unsafe`
      insert into upload_grants (token_sha256, architecture_id, direct, storage_key, expires_at, callback_until)
      values (${digest(token)}, ${found.architecture!.id}, ${direct}, ${storageKey}, now() + make_interval(secs => ${ttl}), now() + make_interval(secs => ${callbackWindow}))`);
    // What a presigned PUT leaves without a callback goes with the next sweep after the callback window.
    if (storageKey)
      await tx.query(
        sql.unsafe`insert into storage_cleanup (storage_key, delete_after) values (${storageKey}, now() + make_interval(secs => ${callbackWindow}))`,
      );
  });
  const own = `${base}${options.prefix}/uploads/${token}`;
  const uploadPath = storageKey ? (await ctx.store.presignedPutUrl(storageKey, ttl))! : own;
  return direct ? { upload_path: uploadPath, callback: `${own}/callback` } : { upload_path: uploadPath };
}

export async function findGrant(ctx: ServiceContext, token: string): Promise<Grant> {
  const tokenSha256 = digest(token);
  const grant = await ctx.pool.maybeOne(sql.type(grantRow)`
    select architecture_id, direct, storage_key, expires_at <= now() as expired, callback_until <= now() as callback_expired, used_at, outcome
    from upload_grants where token_sha256 = ${tokenSha256}`);
  if (!grant) throw notFound('This upload URL is not valid: it was never handed out, or its provider, version or box was deleted since');
  return { ...grant, tokenSha256 };
}

export const alreadyUsed = (grant: Grant) =>
  new HttpError(
    410,
    grant.outcome && grant.outcome !== 'committed'
      ? `This upload URL has been used up: ${grant.outcome}. Ask for a new one (run the publish or upload command again)`
      : 'This upload URL has already been used: ask for a new one (run the publish or upload command again)',
  );

/** In the transaction that commits the file: the grant is used from now on (a concurrent use finds it so). */
export function useGrant(grant: Grant) {
  return async (tx: DatabaseTransactionConnection): Promise<void> => {
    const updated = await tx.query(
      sql.unsafe`update upload_grants set used_at = now(), outcome = 'committed' where token_sha256 = ${grant.tokenSha256} and used_at is null`,
    );
    if (updated.rowCount === 0) throw alreadyUsed(grant);
  };
}

/** A callback that found the bytes wrong: the URL is spent, and says why to whoever tries it again. */
export async function spendGrant(ctx: ServiceContext, grant: Grant, reason: string): Promise<void> {
  await ctx.pool.query(
    sql.unsafe`update upload_grants set used_at = now(), outcome = ${reason.slice(0, 500)} where token_sha256 = ${grant.tokenSha256} and used_at is null`,
  );
}

/** The path of a grant's architecture, looked up as `findPath` does (read rules applied when `checkRead`). */
export async function foundOfGrant(ctx: ServiceContext, request: FastifyRequest, grant: Grant, checkRead: boolean): Promise<Found> {
  const names = await ctx.pool.maybeOne(sql.type(z.object({ org: z.string(), box: z.string(), version: z.string(), provider: z.string(), arch: z.string() }))`
    select o.name as org, b.name as box, v.version_number as version, p.name as provider, a.name as arch
    from architectures a join providers p on p.id = a.provider_id join versions v on v.id = p.version_id join boxes b on b.id = v.box_id join organizations o on o.id = b.organization_id
    where a.id = ${grant.architecture_id}`);
  if (!names) throw notFound('This upload URL is not valid any more: its provider, version or box was deleted');
  return findPath(ctx, request, names, { checkRead });
}
