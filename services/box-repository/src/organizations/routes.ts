// Organizations and their members. Global admins create and delete organizations; organization admins update
// them and manage members; moderators manage the plain users of their organizations.
// The members' routes are member-routes.ts.
import { unprocessable } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath } from '../access/hierarchy.ts';
import { requireGlobalAdmin, requireOrganizationAdmin } from '../access/permissions.ts';
import { principalOf, requirePrincipal, type MemberRole } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { recordOrganizationBoxesDeleted } from '../events/outbox.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { body, email, errors, ORG_PREFIX, params, RESERVED_ORGANIZATION_NAMES, slug, text, updateBody } from '../http/schemas.ts';
import { messageSchema, organizationRow, organizationSchema, type Organization } from '../records.ts';
import { memberRoutes, ROLES } from './member-routes.ts';

type UpdateBody = { name?: string; description?: string; email?: string | null; is_public?: boolean };
type UpdateRequest = FastifyRequest<{ Params: { org: string }; Body: UpdateBody }>;

const orgFields = { name: slug, description: text(4000), email, is_public: { type: 'boolean' } };
const withRole = (org: Organization, role: MemberRole | null) => ({ ...org, role });

function checkNotReserved(name: string): void {
  if (RESERVED_ORGANIZATION_NAMES.includes(name.toLowerCase())) {
    throw unprocessable('Reserved organization name', [
      { pointer: '/name', rule: 'reserved', params: { reserved: RESERVED_ORGANIZATION_NAMES }, detail: `'${name}' is reserved by the service's own paths` },
    ]);
  }
}

const taken = (name: string) => alreadyExists(`An organization named '${name}' already exists`, '/name', name);

function createRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.post<{ Body: { name: string; description?: string; email?: string; is_public?: boolean } }>(
    '/api/organization',
    {
      schema: {
        tags: ['organizations'],
        summary: 'Create an organization (global admins); the creator becomes its admin',
        body: body(orgFields, ['name']),
        response: { 201: organizationSchema, ...errors(401, 403, 409, 422) },
      },
    },
    async (request, reply) => {
      const principal = await requirePrincipal(ctx, request);
      requireGlobalAdmin({ principal, isGlobalAdmin: principal.kind === 'user' && principal.isAdmin });
      const input = request.body;
      checkNotReserved(input.name);
      const org = await uniquely(
        () =>
          ctx.pool.transaction(async (tx) => {
            const created = await tx.one(sql.type(z.object({ o: organizationRow }))`
        insert into organizations as o (name, description, email, is_public)
        values (${input.name}, ${input.description ?? ''}, ${input.email ?? null}, ${input.is_public ?? true})
        returning to_jsonb(o) as o`);
            await tx.query(sql.unsafe`insert into memberships (organization_id, user_id, role) values (${created.o.id}, ${principal.id}::uuid, 'admin')`);
            return created.o;
          }),
        () => taken(input.name),
      );
      return reply.status(201).send(withRole(org, 'admin'));
    },
  );
}

function listRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Querystring: { page?: number; per_page?: number } }>(
    '/api/organization',
    {
      schema: {
        tags: ['organizations'],
        summary: 'List the organizations the caller can see (public ones, and those the caller belongs to)',
        querystring: { type: 'object', properties: paginationQuery },
        response: { 200: { type: 'array', items: organizationSchema }, ...errors(401, 422) },
      },
    },
    async (request, reply) => {
      const principal = await principalOf(ctx, request);
      const userId = principal?.kind === 'user' ? principal.id : null;
      const saOrg = principal?.kind === 'service_account' ? principal.organizationId : null;
      const all = principal?.kind === 'user' && principal.isAdmin;
      const page = pageOf(request.query);
      const visible = sql.fragment`(${all} or o.is_public or m.role is not null or o.id = ${saOrg}::bigint)`;
      const rows = await ctx.pool.any(sql.type(z.object({ o: organizationRow, role: z.enum(ROLES).nullable() }))`
      select to_jsonb(o) as o,
             coalesce(m.role, case when o.id = ${saOrg}::bigint then ${principal?.kind === 'service_account' ? principal.role : null}::text end) as role
      from organizations o
      left join memberships m on m.organization_id = o.id and m.user_id = ${userId}::uuid
      where ${visible}
      order by lower(o.name) limit ${page.limit} offset ${page.offset}`);
      const total = await ctx.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from organizations o left join memberships m on m.organization_id = o.id and m.user_id = ${userId}::uuid where ${visible}`);
      describePage(request, reply, page, total);
      return rows.map((r) => withRole(r.o, r.role));
    },
  );
}

function getRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Params: { org: string } }>(
    ORG_PREFIX,
    {
      schema: { tags: ['organizations'], summary: 'One organization', params: params('org'), response: { 200: organizationSchema, ...errors(401, 403, 404) } },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      return withRole(found.org, found.role);
    },
  );
}

async function update(ctx: ServiceContext, request: UpdateRequest) {
  const found = await findPath(ctx, request, request.params);
  requireOrganizationAdmin(found, found.org.name);
  const input = request.body;
  if (input.name !== undefined) checkNotReserved(input.name);
  const org = await uniquely(
    () =>
      ctx.pool.one(sql.type(z.object({ o: organizationRow }))`
    update organizations o set
      name = coalesce(${input.name ?? null}, name),
      description = coalesce(${input.description ?? null}, description),
      email = case when ${input.email !== undefined} then ${input.email ?? null} else email end,
      is_public = coalesce(${input.is_public ?? null}, is_public),
      updated_at = now()
    where id = ${found.org.id} returning to_jsonb(o) as o`),
    () => taken(input.name ?? ''),
  );
  return withRole(org.o, found.role);
}

function updateRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route<{ Params: { org: string }; Body: UpdateBody }>({
      method,
      url: ORG_PREFIX,
      schema: {
        tags: ['organizations'],
        summary: 'Update an organization (its admins, global admins); members not given are kept',
        params: params('org'),
        body: updateBody({ ...orgFields, email: { ...email, type: ['string', 'null'] } }),
        response: { 200: organizationSchema, ...errors(401, 403, 404, 409, 422) },
      },
      handler: (request) => update(ctx, request),
    });
  }
}

function deleteRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.delete<{ Params: { org: string } }>(
    ORG_PREFIX,
    {
      schema: {
        tags: ['organizations'],
        summary: 'Delete an organization with all its boxes and files (global admins)',
        params: params('org'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      requireGlobalAdmin(found);
      await ctx.cleanup.deleteWithFiles({ organizationId: found.org.id }, async (tx) => {
        await recordOrganizationBoxesDeleted(tx, found.org.id, found.org.name);
        await tx.query(sql.unsafe`delete from organizations where id = ${found.org.id}`);
      });
      return { message: `Organization '${found.org.name}' deleted` };
    },
  );
}

export async function organizationRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  createRoute(app, ctx);
  listRoute(app, ctx);
  getRoute(app, ctx);
  updateRoutes(app, ctx);
  deleteRoute(app, ctx);
  memberRoutes(app, ctx);
}
