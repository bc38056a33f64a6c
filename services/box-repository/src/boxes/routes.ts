// Boxes of an organization. Any member (or the organization's service account) creates them; the creator, the
// organization's moderators and admins, and global admins change or delete them.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath, isMember } from '../access/hierarchy.ts';
import { requireBoxManager, requireMember } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { recordEvent } from '../events/outbox.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { body, BOX_PREFIX, errors, ORG_PREFIX, params, slug, text, updateBody } from '../http/schemas.ts';
import { boxRow, boxSchema, messageSchema, toBoxRecord } from '../records.ts';

const boxFields = {
  name: slug,
  description: text(10_000),
  is_public: { type: 'boolean', description: 'Readable and downloadable by anyone, listed publicly (default false).' },
  published: { type: 'boolean', description: 'false keeps the box a members-only draft (default true).' },
  guest_access: { type: 'boolean', description: 'Anyone with the URL may read and download it, without it being listed (default false).' },
};
type BoxInput = { name?: string; description?: string; is_public?: boolean; published?: boolean; guest_access?: boolean };

export async function boxRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;
  const taken = (org: string, name: string) => alreadyExists(`A box named '${name}' already exists in '${org}'`, '/name', name);

  app.post<{ Params: { org: string }; Body: BoxInput & { name: string } }>(
    `${ORG_PREFIX}/box`,
    {
      schema: {
        tags: ['boxes'],
        summary: 'Create a box (any member of the organization)',
        params: params('org'),
        body: body(boxFields, ['name']),
        response: { 201: boxSchema, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      requireMember(found, found.org.name);
      const principal = found.principal!;
      const input = request.body;
      const userId = principal.kind === 'user' ? principal.id : principal.ownerId;
      const serviceAccountId = principal.kind === 'service_account' ? principal.id : null;
      const created = await uniquely(
        () =>
          pool.one(sql.type(z.object({ b: boxRow }))`
      insert into boxes as b (organization_id, name, description, is_public, published, guest_access, user_id, service_account_id)
      values (${found.org.id}, ${input.name}, ${input.description ?? ''}, ${input.is_public ?? false}, ${input.published ?? true},
              ${input.guest_access ?? false}, ${userId}::uuid, ${serviceAccountId}::bigint)
      returning to_jsonb(b) as b`),
        () => taken(found.org.name, input.name),
      );
      return reply.status(201).send(toBoxRecord(created.b, found.org));
    },
  );

  app.get<{ Params: { org: string }; Querystring: { page?: number; per_page?: number; after?: string } }>(
    `${ORG_PREFIX}/box`,
    {
      schema: {
        tags: ['boxes'],
        summary: "List an organization's boxes: all of them for members, the published public ones for others",
        description: 'By name. The next link carries `after` (the last box of the page): following it costs what the first page costs, however deep.',
        params: params('org'),
        querystring: {
          type: 'object',
          properties: {
            ...paginationQuery,
            after: { ...slug, description: 'Keyset cursor: the boxes after this box name (as the next link writes it); takes precedence over page.' },
          },
        },
        response: { 200: { type: 'array', items: boxSchema }, ...errors(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      const all = isMember(found);
      const page = pageOf(request.query);
      const after = request.query.after ?? null;
      const where = sql.fragment`b.organization_id = ${found.org.id} and (${all} or (b.published and b.is_public))`;
      // Keyset on the (organization_id, lower(name)) index when `after` is given (its walk stops after the page, so
      // the total is a query of its own); otherwise `page` skips rows, and the total comes with the page (a window
      // over every matching box, counted before the limit): one round trip.
      const rows = await pool.any(sql.type(z.object({ b: boxRow, total: z.number() }))`
      select to_jsonb(b) as b, ${after === null ? sql.fragment`(count(*) over ())::int` : sql.fragment`-1`} as total from boxes b
      where ${where} and (${after}::text is null or lower(b.name) > lower(${after}::text))
      order by lower(b.name) limit ${page.limit + 1} offset ${after === null ? page.offset : 0}`);
      const total =
        rows[0] && rows[0].total >= 0
          ? rows[0].total
          : await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from boxes b where ${where}`);
      const shown = rows.slice(0, page.limit);
      describePage(request, reply, page, total, { next: rows.length > page.limit ? shown.at(-1)?.b.name : undefined });
      return shown.map((r) => toBoxRecord(r.b, found.org));
    },
  );

  app.get<{ Params: { org: string; box: string } }>(
    BOX_PREFIX,
    {
      schema: { tags: ['boxes'], summary: 'One box', params: params('org', 'box'), response: { 200: boxSchema, ...errors(401, 403, 404) } },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      return toBoxRecord(found.box!, found.org);
    },
  );

  type UpdateRequest = FastifyRequest<{ Params: { org: string; box: string }; Body: BoxInput }>;
  const update = async (request: UpdateRequest) => {
    const found = await findPath(ctx, request, request.params);
    const box = found.box!;
    requireBoxManager(found, box, found.org.name);
    const input = request.body;
    const updated = await uniquely(
      () =>
        pool.one(sql.type(z.object({ b: boxRow }))`
      update boxes b set
        name = coalesce(${input.name ?? null}, name),
        description = coalesce(${input.description ?? null}, description),
        is_public = coalesce(${input.is_public ?? null}, is_public),
        published = coalesce(${input.published ?? null}, published),
        guest_access = coalesce(${input.guest_access ?? null}, guest_access),
        updated_at = now()
      where id = ${box.id} returning to_jsonb(b) as b`),
      () => taken(found.org.name, input.name ?? ''),
    );
    return toBoxRecord(updated.b, found.org);
  };
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route<{ Params: { org: string; box: string }; Body: BoxInput }>({
      method,
      url: BOX_PREFIX,
      schema: {
        tags: ['boxes'],
        summary: 'Update a box (its creator, moderators and admins); members not given are kept',
        params: params('org', 'box'),
        body: updateBody(boxFields),
        response: { 200: boxSchema, ...errors(401, 403, 404, 409, 422) },
      },
      handler: update,
    });
  }

  app.delete<{ Params: { org: string; box: string } }>(
    BOX_PREFIX,
    {
      schema: {
        tags: ['boxes'],
        summary: 'Delete a box with all its versions and files',
        params: params('org', 'box'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      const box = found.box!;
      requireBoxManager(found, box, found.org.name);
      await ctx.cleanup.deleteWithFiles({ boxId: box.id }, async (tx) => {
        await tx.query(sql.unsafe`delete from boxes where id = ${box.id}`);
        await recordEvent(tx, { type: 'box.deleted', data: { organization: found.org.name, box: box.name } });
      });
      return { message: `Box '${found.org.name}/${box.name}' deleted` };
    },
  );
}
