// Vagrant Cloud API: authenticate, an organization with its boxes, boxes (create, show, update, delete) and
// search. The organization is the API's `username`; tokens are the service's own (service-account keys and session
// tokens as `Authorization: Bearer`), with the roles of the rest of the API (access/permissions.ts).
import { unprocessable } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath, isMember } from '../access/hierarchy.ts';
import { requireBoxManager, requireMember } from '../access/permissions.ts';
import { requirePrincipal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { recordEvent } from '../events/outbox.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { baseUrlOf } from '../http/base-url.ts';
import { SLUG_PATTERN } from '../http/schemas.ts';
import { boxRow } from '../records.ts';
import { boxDocument, boxDocumentOf, loadTrees, type ApiFlavour } from './documents.ts';
import { searchRoute } from './search-route.ts';

const slugPattern = new RegExp(SLUG_PATTERN);

interface BoxInput {
  username?: string;
  name?: string;
  description?: string;
  isPrivate?: boolean;
}

const boxFields = z.object({
  username: z.string().max(100).optional(),
  name: z.string().max(100).optional(),
  short_description: z.string().max(10_000).nullish(),
  description: z.string().max(10_000).nullish(),
  is_private: z.boolean().nullish(),
});

/** A box body flat (`{username, name, ...}`, what gem 3.0.5 sends) or nested (`{box: {...}}`, the documented form). */
export function readBoxBody(body: unknown): BoxInput {
  const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const nested = record && typeof record.box === 'object' && record.box !== null && !Array.isArray(record.box) ? record.box : undefined;
  const parsed = boxFields.safeParse(nested ?? record);
  const fields = parsed.success ? parsed.data : undefined;
  if (!fields || (!nested && record && 'box' in record) || Object.keys(fields).length === 0) {
    throw unprocessable(
      'The box must be sent as {"box": {"username", "name", "short_description", "description", "is_private"}} or with those members at the top level',
      [
        {
          pointer: '/box',
          rule: 'shape',
          params: {},
          detail: 'must be an object with username and name (strings), short_description and description (strings), is_private (boolean)',
        },
      ],
    );
  }
  const description = fields.description ?? fields.short_description ?? undefined;
  return {
    ...(fields.username !== undefined ? { username: fields.username } : {}),
    ...(fields.name !== undefined ? { name: fields.name } : {}),
    ...(description !== undefined && description !== null ? { description } : {}),
    ...(fields.is_private !== undefined && fields.is_private !== null ? { isPrivate: fields.is_private } : {}),
  };
}

export function boxRoutes(app: FastifyInstance, ctx: ServiceContext, flavour: ApiFlavour): void {
  app.get('/authenticate', async (request) => {
    const principal = await requirePrincipal(ctx, request);
    return { user: { username: principal.username } };
  });
  // `vagrant cloud auth logout` deletes "its token" on the server: the service's tokens are revoked through its
  // own API (service accounts, sign-out), never as a side effect of a client forgetting one.
  app.delete('/authenticate', async (request, reply) => {
    await requirePrincipal(ctx, request);
    return reply.status(204).send();
  });

  app.get<{ Params: { org: string } }>('/user/:org', async (request) => {
    const found = await findPath(ctx, request, request.params);
    const boxes = await ctx.pool.any(sql.type(z.object({ b: boxRow }))`
      select to_jsonb(b) as b from boxes b where b.organization_id = ${found.org.id} and (${isMember(found)} or (b.published and b.is_public))
      order by lower(b.name) limit 1000`);
    const trees = await loadTrees(
      ctx,
      boxes.map((r) => r.b.id),
      found,
    );
    const base = baseUrlOf(ctx, request);
    return {
      username: found.org.name,
      avatar_url: null,
      profile_html: '',
      profile_markdown: found.org.description,
      boxes: boxes.map((r) => boxDocument(base, found.org, r.b, trees.get(r.b.id) ?? [], flavour)),
    };
  });

  app.post('/boxes', async (request) => {
    const input = readBoxBody(request.body);
    if (!input.username || !input.name) {
      throw unprocessable('A new box needs username (the organization) and name', [
        { pointer: '/box/name', rule: 'required', params: {}, detail: 'username and name are required' },
      ]);
    }
    if (!slugPattern.test(input.name))
      throw unprocessable(`Invalid box name '${input.name}'`, [
        { pointer: '/box/name', rule: 'pattern', params: { pattern: SLUG_PATTERN }, detail: 'letters, digits, "-" and "_" only, 1 to 100 characters' },
      ]);
    const found = await findPath(ctx, request, { org: input.username });
    requireMember(found, found.org.name);
    const principal = found.principal!;
    const userId = principal.kind === 'user' ? principal.id : principal.ownerId;
    const serviceAccountId = principal.kind === 'service_account' ? principal.id : null;
    const created = await uniquely(
      () =>
        ctx.pool.one(sql.type(z.object({ b: boxRow }))`
      insert into boxes as b (organization_id, name, description, is_public, user_id, service_account_id)
      values (${found.org.id}, ${input.name!}, ${input.description ?? ''}, ${!(input.isPrivate ?? false)}, ${userId}::uuid, ${serviceAccountId}::bigint)
      returning to_jsonb(b) as b`),
      () => alreadyExists(`A box named '${input.name}' already exists in '${found.org.name}'`, '/box/name', input.name!),
    );
    return boxDocument(baseUrlOf(ctx, request), found.org, created.b, [], flavour);
  });

  app.get<{ Params: { org: string; box: string } }>('/box/:org/:box', async (request) =>
    boxDocumentOf(ctx, request, await findPath(ctx, request, request.params), flavour),
  );

  app.put<{ Params: { org: string; box: string } }>('/box/:org/:box', async (request) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = readBoxBody(request.body);
    const isPublic = input.isPrivate === undefined ? null : !input.isPrivate;
    const updated = await ctx.pool.one(sql.type(z.object({ b: boxRow }))`
      update boxes b set description = coalesce(${input.description ?? null}, description), is_public = coalesce(${isPublic}::boolean, is_public), updated_at = now()
      where id = ${found.box!.id} returning to_jsonb(b) as b`);
    return boxDocumentOf(ctx, request, { ...found, box: updated.b }, flavour);
  });

  app.delete<{ Params: { org: string; box: string } }>('/box/:org/:box', async (request) => {
    const found = await findPath(ctx, request, request.params);
    const box = found.box!;
    requireBoxManager(found, box, found.org.name);
    const document = await boxDocumentOf(ctx, request, found, flavour);
    await ctx.cleanup.deleteWithFiles({ boxId: box.id }, async (tx) => {
      await tx.query(sql.unsafe`delete from boxes where id = ${box.id}`);
      await recordEvent(tx, { type: 'box.deleted', data: { organization: found.org.name, box: box.name } });
    });
    return document;
  });

  searchRoute(app, ctx, flavour);
}
