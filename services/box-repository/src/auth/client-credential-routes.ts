// Service accounts, variant B: an admin (global, or of the organization) makes an account for one organization and
// receives a clientId and clientSecret once; the account exchanges them at POST /api/auth/service-account for a
// short-lived session token (auth.jwt.expiresIn) that acts in that organization only. The secret is kept as its
// sha256 only (the key format of variant A, so a leaked secret is recognisable), and is refused as a Bearer key.
import { randomBytes } from 'node:crypto';
import { ignoreError, notFound, unauthorized } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { ServiceContext } from '../context.ts';
import { body, errors, params, text } from '../http/schemas.ts';
import { int8, messageSchema } from '../records.ts';
import { principalOfSubject, requirePrincipal } from './principal.ts';
import { accessTtl } from './sessions.ts';
import { generateServiceAccountKey, keyIdOf, keyMatches } from './service-account-keys.ts';
import { organizationFor, requireUser } from './service-account-routes.ts';

const time = z
  .string()
  .nullable()
  .transform((value) => (value === null ? null : new Date(value).toISOString()));
const clientRow = z.object({
  id: int8,
  name: z.string(),
  description: z.string(),
  organization_id: int8,
  organization: z.string(),
  client_id: z.string(),
  role: z.string(),
  created_by: z.string(),
  expires_at: time,
  last_used_at: time,
  created_at: time,
});
const properties = {
  id: { type: 'integer' },
  name: { type: 'string' },
  description: { type: 'string' },
  organization_id: { type: 'integer' },
  organization: { type: 'string' },
  client_id: { type: 'string' },
  role: { type: 'string' },
  created_by: { type: 'string', description: 'The id of the user who made it: it works while they are an admin of the organization (or a global admin).' },
  expires_at: { type: ['string', 'null'], format: 'date-time' },
  last_used_at: { type: ['string', 'null'], format: 'date-time' },
  created_at: { type: 'string', format: 'date-time' },
} as const;
const clientSchema = { type: 'object', properties, required: Object.keys(properties), additionalProperties: false } as const;
const createdSchema = {
  ...clientSchema,
  properties: { ...properties, client_secret: { type: 'string', description: 'Shown once; exchange it with client_id at POST /api/auth/service-account.' } },
  required: [...clientSchema.required, 'client_secret'],
} as const;
const tokenSchema = {
  type: 'object',
  properties: {
    access_token: { type: 'string' },
    token_type: { type: 'string', enum: ['Bearer'] },
    expires_at: { type: 'string', format: 'date-time' },
    expires_in: { type: 'integer' },
  },
  required: ['access_token', 'token_type', 'expires_at', 'expires_in'],
  additionalProperties: false,
} as const;

const selectClients = sql.fragment`
  select s.id, coalesce(s.name, s.username) as name, s.description, s.organization_id, o.name as organization, s.username as client_id,
         s.role, s.user_id::text as created_by,
         to_jsonb(s.expires_at) #>> '{}' as expires_at, to_jsonb(s.last_used_at) #>> '{}' as last_used_at, to_jsonb(s.created_at) #>> '{}' as created_at
  from service_accounts s join organizations o on o.id = s.organization_id`;

export async function clientCredentialRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;

  app.post<{ Body: { name: string; description?: string; organization_id: number; role?: 'user' | 'moderator'; expiration_days?: number } }>(
    '/api/admin/service-accounts',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Service account variant B: client credentials for one organization (global admins, admins of that organization); the secret is returned once',
        body: body(
          {
            name: { type: 'string', minLength: 1, maxLength: 100 },
            description: text(1000),
            organization_id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
            role: { type: 'string', enum: ['user', 'moderator'], default: 'user', description: 'Its role in the organization.' },
            expiration_days: { type: 'integer', minimum: 1, maximum: 3650, description: 'Days until the credentials stop working (default: never).' },
          },
          ['name', 'organization_id'],
        ),
        response: { 201: createdSchema, ...errors(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const user = requireUser(await requirePrincipal(ctx, request));
      const input = request.body;
      const org = await organizationFor(ctx, user, { id: input.organization_id });
      const key = generateServiceAccountKey();
      const clientId = `sa-${randomBytes(6).toString('hex')}`;
      const id = await pool.oneFirst(sql.type(z.object({ id: int8 }))`
      insert into service_accounts (kind, name, key_id, key_sha256, username, user_id, organization_id, role, description, expires_at)
      values ('client', ${input.name}, ${key.keyId}, ${key.sha256}, ${clientId}, ${user.id}::uuid, ${org.id}, ${input.role ?? 'user'}, ${input.description ?? ''},
              case when ${input.expiration_days ?? null}::int is null then null else now() + make_interval(days => ${input.expiration_days ?? 0}) end)
      returning id`);
      const created = await pool.one(sql.type(clientRow)`${selectClients} where s.id = ${id}`);
      return reply.status(201).send({ ...created, client_secret: key.key });
    },
  );

  app.get(
    '/api/admin/service-accounts',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Variant B service accounts: all for global admins, those of the organizations one administers otherwise',
        response: { 200: { type: 'array', items: clientSchema }, ...errors(401, 403) },
      },
    },
    async (request) => {
      const user = requireUser(await requirePrincipal(ctx, request));
      return pool.any(sql.type(clientRow)`${selectClients}
      where s.kind = 'client' and (${user.isAdmin} or exists (select 1 from memberships m where m.organization_id = s.organization_id and m.user_id = ${user.id}::uuid and m.role = 'admin'))
      order by s.id`);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/admin/service-accounts/:id',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Delete a variant B service account (global admins, admins of its organization); its tokens stop working at once',
        params: params('id'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const user = requireUser(await requirePrincipal(ctx, request));
      const id = /^\d{1,15}$/.test(request.params.id) ? Number(request.params.id) : 0;
      const account = await pool.maybeOne(sql.type(z.object({ organization_id: int8, client_id: z.string() }))`
      select organization_id, username as client_id from service_accounts where id = ${id} and kind = 'client'`);
      if (!account) throw notFound(`Service account ${request.params.id} not found`);
      await organizationFor(ctx, user, { id: account.organization_id });
      await pool.query(sql.unsafe`delete from service_accounts where id = ${id}`);
      return { message: `Service account '${account.client_id}' deleted` };
    },
  );

  app.post<{ Body: { client_id: string; client_secret: string } }>(
    '/api/auth/service-account',
    {
      schema: {
        tags: ['auth'],
        summary: "Exchange a variant B service account's clientId and clientSecret for a session token (send it as x-access-token)",
        body: body({ client_id: text(64), client_secret: text(256) }, ['client_id', 'client_secret']),
        response: { 200: tokenSchema, ...errors(401, 429) },
      },
    },
    async (request) => {
      const { client_id: clientId, client_secret: secret } = request.body;
      const refused = () => unauthorized('Invalid client credentials', { 'www-authenticate': 'Bearer realm="boxyard-box-repository", error="invalid_client"' });
      const keyId = keyIdOf(secret);
      const row = keyId
        ? await pool.maybeOne(sql.type(z.object({ id: int8, username: z.string(), key_sha256: z.string() }))`
          select id, username, key_sha256 from service_accounts where key_id = ${keyId} and kind = 'client'`)
        : null;
      if (!row || row.username !== clientId || !keyMatches(secret, row.key_sha256)) throw refused();
      // Expired, or its creator lost the authority: the same checks as every use of the token.
      await principalOfSubject(ctx, `sa:${row.id}`);
      void pool
        .query(sql.unsafe`update service_accounts set last_used_at = now() where id = ${row.id}`)
        .catch(ignoreError('last-used is a hint, written at most once a minute'));
      const ttl = accessTtl(ctx, false);
      const issued = await ctx.tokens.sign(`sa:${row.id}`, {}, ttl);
      return { access_token: issued.token, token_type: 'Bearer', expires_at: issued.expiresAt.toISOString(), expires_in: ttl };
    },
  );
}
