// Service accounts (the seed's variant A): machine identities for CI and Vagrant, created by a global admin or an
// admin of the organization they are scoped to, acting only in that organization with the role given (user or
// moderator). The key is returned once at creation; only its sha256 is kept.
import { randomBytes } from 'node:crypto';
import { forbidden, notFound, unprocessable } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { roleIn } from '../access/hierarchy.ts';
import { requireOrganizationAdmin } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { body, errors, params, text } from '../http/schemas.ts';
import { int8, messageSchema } from '../records.ts';
import { requirePrincipal, type UserPrincipal } from './principal.ts';
import { generateServiceAccountKey } from './service-account-keys.ts';

const MAX_EXPIRATION_DAYS = 3650;
const time = z
  .string()
  .nullable()
  .transform((value) => (value === null ? null : new Date(value).toISOString()));
const accountRow = z.object({
  id: int8,
  user_id: z.string(),
  username: z.string(),
  description: z.string(),
  organization_id: int8,
  organization: z.string(),
  role: z.string(),
  expires_at: time,
  last_used_at: time,
  created_at: time,
  updated_at: time,
});

const properties = {
  id: { type: 'integer' },
  user_id: { type: 'string' },
  username: { type: 'string' },
  description: { type: 'string' },
  organization_id: { type: 'integer' },
  organization: { type: 'string' },
  role: { type: 'string' },
  expires_at: { type: ['string', 'null'], format: 'date-time' },
  last_used_at: { type: ['string', 'null'], format: 'date-time' },
  created_at: { type: 'string', format: 'date-time' },
  updated_at: { type: 'string', format: 'date-time' },
} as const;
const accountSchema = { type: 'object', properties, required: Object.keys(properties), additionalProperties: false } as const;
const createdSchema = {
  ...accountSchema,
  properties: {
    ...properties,
    token: {
      type: 'string',
      description: 'The key: shown once. Use it as `Authorization: Bearer`, `?access_token=`, the Basic password, or VAGRANT_CLOUD_TOKEN.',
    },
  },
  required: [...accountSchema.required, 'token'],
} as const;

const selectAccounts = sql.fragment`
  select s.id, s.user_id, s.username, s.description, s.organization_id, o.name as organization, s.role,
         to_jsonb(s.expires_at) #>> '{}' as expires_at, to_jsonb(s.last_used_at) #>> '{}' as last_used_at,
         to_jsonb(s.created_at) #>> '{}' as created_at, to_jsonb(s.updated_at) #>> '{}' as updated_at
  from service_accounts s join organizations o on o.id = s.organization_id`;

/**
 * The organization an account is made for, where the creator must be a global admin or its admin. Without one
 * named, the creator's own organization: the first they belong to by name (the `organization` of the sign-in).
 */
export async function organizationFor(ctx: ServiceContext, user: UserPrincipal, named: { id: number } | { name: string } | undefined) {
  const orgRow = z.object({ id: int8, name: z.string(), is_public: z.boolean(), role: z.enum(['admin', 'moderator', 'user']).nullable() });
  const org = named
    ? await ctx.pool.maybeOne(sql.type(orgRow)`
        select o.id, o.name, o.is_public, m.role from organizations o left join memberships m on m.organization_id = o.id and m.user_id = ${user.id}::uuid
        where ${'id' in named ? sql.fragment`o.id = ${named.id}` : sql.fragment`lower(o.name) = lower(${named.name})`}`)
    : await ctx.pool.maybeOne(sql.type(orgRow)`
        select o.id, o.name, o.is_public, m.role from memberships m join organizations o on o.id = m.organization_id
        where m.user_id = ${user.id}::uuid order by lower(o.name) limit 1`);
  // A private organization the caller cannot read answers as a missing one (access/hierarchy.ts: hidden).
  if (named && (!org || !(org.is_public || org.role !== null || user.isAdmin)))
    throw notFound(`Organization '${'id' in named ? named.id : named.name}' not found`);
  if (!org) {
    // Only a global admin may create one without belonging anywhere: for anyone else it is a matter of rights.
    if (!user.isAdmin) throw forbidden('Insufficient permissions: service accounts are created by global admins and admins of their organization');
    throw unprocessable('You belong to no organization: name the one the account acts in', [
      {
        pointer: '/organization',
        rule: 'required',
        params: { missingProperty: 'organization' },
        detail: 'name the organization (organization or organization_id) the account acts in',
      },
    ]);
  }
  requireOrganizationAdmin({ principal: user, role: roleIn(user, org.id, org.role), isGlobalAdmin: user.isAdmin }, org.name);
  return org;
}

export function requireUser(principal: Awaited<ReturnType<typeof requirePrincipal>>): UserPrincipal {
  if (principal.kind !== 'user') throw forbidden('Service accounts cannot manage service accounts');
  return principal;
}

export async function serviceAccountRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;

  app.post<{ Body: { description?: string; expiration_days?: number; organization?: string; organization_id?: number; role?: 'user' | 'moderator' } }>(
    '/api/service-accounts',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Create a service account scoped to one organization (global admins, admins of that organization); the key is returned once',
        body: body({
          description: text(1000),
          expiration_days: { type: 'integer', minimum: 1, maximum: MAX_EXPIRATION_DAYS, description: 'Days until the key stops working (default: never).' },
          organization: {
            type: 'string',
            description: "Name of the organization it acts in (or organization_id); default: the creator's organization (the `organization` of their sign-in).",
          },
          organization_id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
          role: { type: 'string', enum: ['user', 'moderator'], default: 'user', description: 'Its role in the organization.' },
        }),
        response: { 201: createdSchema, ...errors(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const user = requireUser(await requirePrincipal(ctx, request));
      const input = request.body;
      const org = await organizationFor(
        ctx,
        user,
        input.organization_id !== undefined ? { id: input.organization_id } : input.organization !== undefined ? { name: input.organization } : undefined,
      );
      const key = generateServiceAccountKey();
      const username = `sa-${randomBytes(6).toString('hex')}`;
      const created = await pool.one(sql.type(accountRow)`
      with s as (
        insert into service_accounts (kind, key_id, key_sha256, username, user_id, organization_id, role, description, expires_at)
        values ('key', ${key.keyId}, ${key.sha256}, ${username}, ${user.id}::uuid, ${org.id}, ${input.role ?? 'user'}, ${input.description ?? ''},
                case when ${input.expiration_days ?? null}::int is null then null else now() + make_interval(days => ${input.expiration_days ?? 0}) end)
        returning *)
      select s.id, s.user_id, s.username, s.description, s.organization_id, o.name as organization, s.role,
             to_jsonb(s.expires_at) #>> '{}' as expires_at, to_jsonb(s.last_used_at) #>> '{}' as last_used_at,
             to_jsonb(s.created_at) #>> '{}' as created_at, to_jsonb(s.updated_at) #>> '{}' as updated_at
      from s join organizations o on o.id = s.organization_id`);
      return reply.status(201).send({ ...created, token: key.key });
    },
  );

  app.get(
    '/api/service-accounts',
    {
      schema: {
        tags: ['service accounts'],
        summary: "The caller's service accounts (all of them for global admins); keys are never shown again",
        response: { 200: { type: 'array', items: accountSchema }, ...errors(401, 403) },
      },
    },
    async (request) => {
      const user = requireUser(await requirePrincipal(ctx, request));
      return pool.any(sql.type(accountRow)`${selectAccounts} where s.kind = 'key' and (${user.isAdmin} or s.user_id = ${user.id}::uuid) order by s.id`);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/service-accounts/:id',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Delete a service account (its creator, admins of its organization, global admins); its key stops working',
        params: params('id'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const user = requireUser(await requirePrincipal(ctx, request));
      const id = /^\d{1,15}$/.test(request.params.id) ? Number(request.params.id) : 0;
      const account = await pool.maybeOne(sql.type(
        z.object({ user_id: z.string(), organization_id: int8, org_role: z.string().nullable(), username: z.string() }),
      )`
      select s.user_id, s.organization_id, s.username,
             (select role from memberships m where m.organization_id = s.organization_id and m.user_id = ${user.id}::uuid) as org_role
      from service_accounts s where s.id = ${id} and s.kind = 'key'`);
      if (!account) throw notFound(`Service account ${request.params.id} not found`);
      if (!(user.isAdmin || account.user_id === user.id || account.org_role === 'admin'))
        throw forbidden('Only its creator, admins of its organization or global admins may delete a service account');
      await pool.query(sql.unsafe`delete from service_accounts where id = ${id}`);
      return { message: `Service account '${account.username}' deleted` };
    },
  );
}
