// An organization's members: list, add or change a role, remove. Organization admins manage any member;
// moderators manage the plain users of their organizations.
import { forbidden, notFound } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath, type Found } from '../access/hierarchy.ts';
import { requireMember, requireOrganizationAdmin } from '../access/permissions.ts';
import type { MemberRole } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { body, errors, ORG_PREFIX, params } from '../http/schemas.ts';
import { messageSchema } from '../records.ts';

export const ROLES = ['admin', 'moderator', 'user'] as const;

const memberSchema = {
  type: 'object',
  properties: {
    user_id: { type: 'string' },
    username: { type: 'string' },
    email: { type: ['string', 'null'] },
    role: { type: 'string', enum: [...ROLES] },
    created_at: { type: 'string', format: 'date-time' },
  },
  required: ['user_id', 'username', 'email', 'role', 'created_at'],
  additionalProperties: false,
} as const;
const memberRow = z.object({
  user_id: z.string(),
  username: z.string(),
  email: z.string().nullable(),
  role: z.enum(ROLES),
  created_at: z.number().transform((ms) => new Date(ms).toISOString()),
});

/** Admins manage any member; moderators only plain users (and only as plain users). */
function requireMemberManager(found: Found, roles: (MemberRole | null)[]): void {
  if (found.isGlobalAdmin || found.role === 'admin') return;
  if (found.role === 'moderator' && found.principal?.kind === 'user' && roles.every((r) => r === null || r === 'user')) return;
  if (found.role === 'moderator') throw forbidden('Moderators manage plain users only');
  requireOrganizationAdmin(found, found.org.name);
}

async function findUser(ctx: ServiceContext, username: string) {
  const user = await ctx.accounts.findByUsername(username);
  if (!user) throw notFound(`User '${username}' not found`);
  return user;
}

const currentRole = (ctx: ServiceContext, orgId: number, userId: string) =>
  ctx.pool.maybeOneFirst(
    sql.type(z.object({ role: z.enum(ROLES) }))`select role from memberships where organization_id = ${orgId} and user_id = ${userId}::uuid`,
  );

/** Service accounts never manage members, whatever their role: refused as any non-admin is. */
function refuseServiceAccount(found: Found): void {
  if (found.principal?.kind === 'service_account') requireOrganizationAdmin({ ...found, role: null, isGlobalAdmin: false }, found.org.name);
}

function listMembersRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Params: { org: string }; Querystring: { page?: number; per_page?: number } }>(
    `${ORG_PREFIX}/members`,
    {
      schema: {
        tags: ['organizations'],
        summary: "List an organization's members (members, global admins)",
        params: params('org'),
        querystring: { type: 'object', properties: paginationQuery },
        response: { 200: { type: 'array', items: memberSchema }, ...errors(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      requireMember(found, found.org.name);
      const page = pageOf(request.query);
      const rows = await ctx.pool.any(sql.type(memberRow)`
      select u.id as user_id, u.username, u.email, m.role, m.created_at
      from memberships m join users u on u.id = m.user_id
      where m.organization_id = ${found.org.id} order by lower(u.username) limit ${page.limit} offset ${page.offset}`);
      const total = await ctx.pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`select count(*)::int as n from memberships where organization_id = ${found.org.id}`,
      );
      describePage(request, reply, page, total);
      return rows;
    },
  );
}

function putMemberRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.put<{ Params: { org: string; username: string }; Body: { role: MemberRole } }>(
    `${ORG_PREFIX}/members/:username`,
    {
      schema: {
        tags: ['organizations'],
        summary: 'Add a user to an organization or change their role (org admins; moderators for plain users)',
        params: params('org', 'username'),
        body: body({ role: { type: 'string', enum: [...ROLES] } }, ['role']),
        response: { 200: memberSchema, ...errors(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      refuseServiceAccount(found);
      const user = await findUser(ctx, request.params.username);
      requireMemberManager(found, [request.body.role, await currentRole(ctx, found.org.id, user.id)]);
      return ctx.pool.one(sql.type(memberRow)`
      with m as (
        insert into memberships (organization_id, user_id, role) values (${found.org.id}, ${user.id}::uuid, ${request.body.role})
        on conflict (organization_id, user_id) do update set role = excluded.role
        returning user_id, role, created_at)
      select u.id as user_id, u.username, u.email, m.role, m.created_at from m join users u on u.id = m.user_id`);
    },
  );
}

function removeMemberRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.delete<{ Params: { org: string; username: string } }>(
    `${ORG_PREFIX}/members/:username`,
    {
      schema: {
        tags: ['organizations'],
        summary: 'Remove a user from an organization (org admins; moderators for plain users)',
        params: params('org', 'username'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      refuseServiceAccount(found);
      const user = await findUser(ctx, request.params.username);
      const role = await currentRole(ctx, found.org.id, user.id);
      if (role === null) throw notFound(`User '${user.username}' is not a member of '${found.org.name}'`);
      requireMemberManager(found, [role]);
      await ctx.pool.query(sql.unsafe`delete from memberships where organization_id = ${found.org.id} and user_id = ${user.id}::uuid`);
      return { message: `User '${user.username}' removed from '${found.org.name}'` };
    },
  );
}

export function memberRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  listMembersRoute(app, ctx);
  putMemberRoute(app, ctx);
  removeMemberRoute(app, ctx);
}
