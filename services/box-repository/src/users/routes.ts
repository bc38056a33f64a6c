// User administration (global admins): list, disable and re-enable, grant and revoke admin, delete. A disabled
// or deleted user's sessions, refresh tokens and service accounts stop at the next request, on every replica
// (each request reads the account's state). The last enabled admin cannot be disabled, demoted or deleted, so
// the service never ends up without one. Moderators manage members of their own organizations through
// /api/organization/{org}/members.
import { conflict, notFound } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { requireGlobalAdmin } from '../access/permissions.ts';
import { requirePrincipal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { errors, params, updateBody } from '../http/schemas.ts';
import { messageSchema } from '../records.ts';

const adminUserProperties = {
  id: { type: 'string' },
  username: { type: 'string' },
  email: { type: ['string', 'null'] },
  roles: { type: 'array', items: { type: 'string' } },
  disabled: { type: 'boolean' },
  organizations: {
    type: 'array',
    items: { type: 'object', properties: { name: { type: 'string' }, role: { type: 'string' } }, required: ['name', 'role'], additionalProperties: false },
  },
  created_at: { type: 'string', format: 'date-time' },
} as const;
const adminUserSchema = { type: 'object', properties: adminUserProperties, required: Object.keys(adminUserProperties), additionalProperties: false } as const;

const userRow = z.object({
  id: z.string(),
  username: z.string(),
  email: z.string().nullable(),
  role: z.string(),
  disabled: z.boolean(),
  organizations: z.array(z.object({ name: z.string(), role: z.string() })),
  created_at: z.string(),
});
const present = (row: z.output<typeof userRow>) => ({
  id: row.id,
  username: row.username,
  email: row.email,
  roles: row.role === 'admin' ? ['user', 'admin'] : ['user'],
  disabled: row.disabled,
  organizations: row.organizations,
  created_at: new Date(row.created_at).toISOString(),
});
const selectUsers = sql.fragment`
  select u.id::text, u.username, u.email, u.role, u.disabled_at is not null as disabled, to_jsonb(u.created_at) #>> '{}' as created_at,
         coalesce((select jsonb_agg(jsonb_build_object('name', o.name, 'role', m.role) order by lower(o.name))
                   from memberships m join organizations o on o.id = m.organization_id where m.user_id = u.id), '[]'::jsonb) as organizations
  from users u`;

export async function userAdminRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;
  const requireAdmin = async (request: Parameters<typeof requirePrincipal>[1]) => {
    const principal = await requirePrincipal(ctx, request);
    requireGlobalAdmin({ principal, isGlobalAdmin: principal.kind === 'user' && principal.isAdmin });
  };
  const find = async (username: string) => {
    const row = await pool.maybeOne(sql.type(userRow)`${selectUsers} where lower(u.username) = lower(${username})`);
    if (!row) throw notFound(`User '${username}' not found`);
    return row;
  };

  app.get<{ Querystring: { page?: number; per_page?: number; q?: string } }>(
    '/api/admin/users',
    {
      schema: {
        tags: ['users'],
        summary: 'Every account with its roles, state and organizations (global admins)',
        querystring: {
          type: 'object',
          properties: { ...paginationQuery, q: { type: 'string', maxLength: 100, description: 'Part of the username or e-mail address.' } },
        },
        response: { 200: { type: 'array', items: adminUserSchema }, ...errors(401, 403) },
      },
    },
    async (request, reply) => {
      await requireAdmin(request);
      const page = pageOf(request.query);
      const pattern = `%${(request.query.q ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const where = sql.fragment`where (u.username ilike ${pattern} or coalesce(u.email, '') ilike ${pattern})`;
      const rows = await pool.any(sql.type(userRow)`${selectUsers} ${where} order by lower(u.username) limit ${page.limit} offset ${page.offset}`);
      const total = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from users u ${where}`);
      describePage(request, reply, page, total);
      return rows.map(present);
    },
  );

  app.get<{ Params: { username: string } }>(
    '/api/admin/users/:username',
    {
      schema: {
        tags: ['users'],
        summary: 'One account (global admins)',
        params: params('username'),
        response: { 200: adminUserSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      await requireAdmin(request);
      return present(await find(request.params.username));
    },
  );

  app.patch<{ Params: { username: string }; Body: { disabled?: boolean; admin?: boolean } }>(
    '/api/admin/users/:username',
    {
      schema: {
        tags: ['users'],
        summary: "Disable or re-enable an account, grant or revoke admin (global admins); a disabled account's sessions and keys stop at once",
        params: params('username'),
        body: updateBody({ disabled: { type: 'boolean' }, admin: { type: 'boolean', description: 'true grants the admin role, false revokes it.' } }),
        response: { 200: adminUserSchema, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      await requireAdmin(request);
      const user = await find(request.params.username);
      const { disabled, admin } = request.body;
      const losesAdmin = user.role === 'admin' && !user.disabled && (admin === false || disabled === true);
      await pool.transaction(async (tx) => {
        // Serialises admin changes, so two admins demoting each other at once cannot leave none.
        await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('box-repository:admins'))`);
        if (losesAdmin) await requireAnotherAdmin(tx, user.id);
        await tx.query(sql.unsafe`
        update users set
          role = case when ${admin ?? null}::boolean is null then role when ${admin ?? null}::boolean then 'admin' else 'user' end,
          disabled_at = case when ${disabled ?? null}::boolean is null then disabled_at when ${disabled ?? null}::boolean then coalesce(disabled_at, now()) else null end,
          updated_at = now()
        where id = ${user.id}::uuid`);
      });
      return present(await find(user.username));
    },
  );

  app.delete<{ Params: { username: string } }>(
    '/api/admin/users/:username',
    {
      schema: {
        tags: ['users'],
        summary: 'Delete an account with its memberships and service accounts (global admins); boxes it created stay',
        params: params('username'),
        response: { 200: messageSchema, ...errors(401, 403, 404, 409) },
      },
    },
    async (request) => {
      await requireAdmin(request);
      const user = await find(request.params.username);
      await pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('box-repository:admins'))`);
        if (user.role === 'admin' && !user.disabled) await requireAnotherAdmin(tx, user.id);
        await tx.query(sql.unsafe`delete from users where id = ${user.id}::uuid`);
      });
      return { message: `User '${user.username}' deleted` };
    },
  );
}

async function requireAnotherAdmin(tx: Parameters<Parameters<ServiceContext['pool']['transaction']>[0]>[0], userId: string): Promise<void> {
  const others = await tx.exists(sql.unsafe`select 1 from users where role = 'admin' and disabled_at is null and id <> ${userId}::uuid`);
  if (!others) throw conflict('This is the last enabled administrator: make another user admin first');
}
