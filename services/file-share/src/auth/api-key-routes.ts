// GET/POST /api/api-keys, PUT/DELETE /api/api-keys/{id}.
//
// Granting rules (no escalation, ever):
// - a key's permissions are a subset of what its owner's role may put in keys (admin: any; user: downloads);
// - a key created with a key (Bearer bfs_...) holds at most that key's permissions, within its scope, and
//   expires no later than it (inheriting its expiry when none is given); deleting a key deletes what it minted;
// - PUT may narrow or (for users signed in as themselves) change a key within the same limits, never beyond
//   the key it was minted from; narrowing a key narrows everything minted from it.
// Who manages what: users (session or Basic) their own keys, admins every key; a caller using a key sees and
// deletes only that key and the keys minted from it, and cannot PUT.
import { badRequest, forbidden, notFound } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { envelopeSchema, ok } from '../http/envelope.ts';
import { isWithin, validateSharePath } from '../paths/share-path.ts';
import type { ApiKeyRecord, ApiKeyStore } from './api-key-store.ts';
import { asRole, keyPermissionsForRole, PERMISSIONS, refuse, requireUser, type Permission, type Principal } from './principal.ts';

export interface ApiKeyRoutesOptions {
  pool: DatabasePool;
  keys: ApiKeyStore;
}

const keyView = (key: ApiKeyRecord & { username?: string }) => ({
  id: key.id,
  name: key.name,
  permissions: key.permissions,
  scope: key.scope,
  expires_at: key.expires_at === null ? null : new Date(key.expires_at).toISOString(),
  created_at: new Date(key.created_at).toISOString(),
  last_used_at: key.last_used_at === null ? null : new Date(key.last_used_at).toISOString(),
  created_by_key: key.created_by_key,
  ...(key.username ? { owner: key.username } : {}),
});

const keySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    permissions: { type: 'array', items: { type: 'string', enum: [...PERMISSIONS] } },
    scope: { type: 'string' },
    expires_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: { type: 'string', format: 'date-time' },
    last_used_at: { type: ['string', 'null'], format: 'date-time' },
    created_by_key: { type: ['string', 'null'] },
    owner: { type: 'string' },
  },
};

const permissionsSchema = { type: 'array', items: { type: 'string', enum: [...PERMISSIONS] }, minItems: 1, uniqueItems: true };
const idParams = { type: 'object', properties: { id: { type: 'string', pattern: '^[0-9a-f]{16}$' } }, required: ['id'] };

function parseExpiry(value: string | null | undefined, pointer: string): Date | null | undefined {
  if (value === undefined || value === null) return value;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw badRequest('Invalid expiry', [{ pointer, rule: 'format', params: {}, detail: 'must be an ISO 8601 timestamp' }]);
  if (date.getTime() <= Date.now()) throw badRequest('Invalid expiry', [{ pointer, rule: 'future', params: {}, detail: 'must be in the future' }]);
  return date;
}

/** The most a grant may hold: the owner role's key permissions, and the parent key's when there is one. */
function checkGrant(
  principal: Principal,
  limits: { ownerRole: string; parent: { permissions: readonly Permission[]; expiresAt: Date | null; scope: string } | null },
  requested: { permissions: readonly Permission[]; expiresAt: Date | null; scope: string },
): void {
  const allowed = keyPermissionsForRole[asRole(limits.ownerRole)].filter((p) => !limits.parent || limits.parent.permissions.includes(p));
  const excess = requested.permissions.filter((p) => !allowed.includes(p));
  if (excess.length > 0) {
    throw refuse(principal, `Insufficient permissions: this key may not hold ${excess.join(', ')} (at most: ${allowed.join(', ') || 'nothing'})`);
  }
  if (limits.parent) {
    if (limits.parent.expiresAt && (requested.expiresAt === null || requested.expiresAt > limits.parent.expiresAt)) {
      throw forbidden(`Insufficient permissions: a key minted by a key cannot outlive it (${limits.parent.expiresAt.toISOString()})`);
    }
    if (!isWithin(requested.scope, limits.parent.scope)) throw forbidden(`Insufficient permissions: the scope must be inside ${limits.parent.scope}`);
  }
}

export async function apiKeyRoutes(app: FastifyInstance, options: ApiKeyRoutesOptions): Promise<void> {
  listKeysRoute(app, options);
  createKeyRoute(app, options);
  updateKeyRoute(app, options);
  revokeKeyRoute(app, options);
}

/** Key ids a key-authenticated caller may see and delete: itself and everything minted from it. */
const lineageOf = (pool: DatabasePool, keyId: string) =>
  pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    with recursive lineage as (
      select id from api_keys where id = ${keyId}
      union all
      select k.id from api_keys k join lineage l on k.created_by_key = l.id
    ) select id from lineage`);

async function visibleKey({ keys, pool }: ApiKeyRoutesOptions, principal: Principal, id: string) {
  const user = requireUser(principal);
  const key = await keys.get(id);
  if (!key) return null;
  if (principal.key) return (await lineageOf(pool, principal.key.id)).includes(id) ? key : null;
  if (user.role === 'admin') return key;
  return key.user_id === user.id ? key : null;
}

function listKeysRoute(app: FastifyInstance, { keys, pool }: ApiKeyRoutesOptions): void {
  app.get(
    '/api/api-keys',
    {
      schema: {
        summary: "List the caller's API keys (admins: `?all=true` for every user's)",
        tags: ['api-keys'],
        querystring: { type: 'object', properties: { all: { type: 'boolean', default: false } } },
        response: { 200: envelopeSchema({ type: 'object', properties: { keys: { type: 'array', items: keySchema } } }) },
      },
    },
    async (request) => {
      const principal = request.principal;
      const user = requireUser(principal);
      const { all } = request.query as { all: boolean };
      if (all && (user.role !== 'admin' || principal.key)) throw refuse(principal, 'Insufficient permissions: administrators only');
      let rows = await keys.list(all ? null : user.id);
      if (principal.key) {
        const lineage = new Set(await lineageOf(pool, principal.key.id));
        rows = rows.filter((row) => lineage.has(row.id));
      }
      return ok('API keys', { keys: rows.map(keyView) });
    },
  );
}

function createKeyRoute(app: FastifyInstance, { keys }: ApiKeyRoutesOptions): void {
  app.post(
    '/api/api-keys',
    {
      schema: {
        summary: 'Create an API key (the token is returned once)',
        description:
          'Permissions: `downloads` (list, download, search, events), `uploads` (upload, create folders), ' +
          '`delete` (delete, replace; with uploads: rename). Users may create download-only keys; admins any. `expires_at` (ISO 8601, optional: none = no ' +
          'expiry) and `scope` (a folder path, default `/`) are optional.',
        tags: ['api-keys'],
        body: {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 },
            permissions: permissionsSchema,
            expires_at: { type: ['string', 'null'] },
            scope: { type: 'string', maxLength: 4096 },
          },
          required: ['name', 'permissions'],
          additionalProperties: false,
        },
        response: { 201: envelopeSchema({ type: 'object', properties: { key: keySchema, token: { type: 'string' } } }) },
      },
    },
    async (request, reply) => {
      const principal = request.principal;
      const user = requireUser(principal);
      const body = request.body as { name: string; permissions: Permission[]; expires_at?: string | null; scope?: string };
      const parent = principal.key ? { permissions: [...principal.permissions], expiresAt: principal.key.expiresAt, scope: principal.scope } : null;
      const scope = body.scope === undefined ? (parent?.scope ?? '/') : validateSharePath(body.scope, '/scope');
      const expiresAt = parseExpiry(body.expires_at, '/expires_at') ?? parent?.expiresAt ?? null;
      checkGrant(principal, { ownerRole: user.role, parent }, { permissions: body.permissions, expiresAt, scope });
      const { record, token } = await keys.create({
        userId: user.id,
        name: body.name,
        permissions: body.permissions,
        scope,
        expiresAt,
        createdByKey: principal.key?.id ?? null,
      });
      return reply.status(201).send(ok('API key created; the token is shown only this once', { key: keyView(record), token }));
    },
  );
}

function updateKeyRoute(app: FastifyInstance, options: ApiKeyRoutesOptions): void {
  const { keys } = options;
  app.put(
    '/api/api-keys/:id',
    {
      schema: {
        summary: 'Update an API key: name, permissions and/or expires_at (null removes the expiry)',
        description: "Same limits as creation; narrowing a key narrows the keys minted from it. Needs the user's own sign-in, not a key.",
        tags: ['api-keys'],
        params: idParams,
        body: {
          type: 'object',
          properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, permissions: permissionsSchema, expires_at: { type: ['string', 'null'] } },
          additionalProperties: false,
          minProperties: 1,
        },
        response: { 200: envelopeSchema({ type: 'object', properties: { key: keySchema } }) },
      },
    },
    async (request) => {
      const principal = request.principal;
      requireUser(principal);
      if (principal.key) throw forbidden('Insufficient permissions: API keys cannot be edited with an API key; sign in as the user');
      const { id } = request.params as { id: string };
      const body = request.body as { name?: string; permissions?: Permission[]; expires_at?: string | null };
      const key = await visibleKey(options, principal, id);
      if (!key) throw notFound(`No API key ${id}`);
      const parentRecord = key.created_by_key ? await keys.get(key.created_by_key) : null;
      const parent = parentRecord
        ? {
            permissions: parentRecord.permissions,
            expiresAt: parentRecord.expires_at === null ? null : new Date(parentRecord.expires_at),
            scope: parentRecord.scope,
          }
        : null;
      const expiresAt =
        body.expires_at === undefined ? (key.expires_at === null ? null : new Date(key.expires_at)) : (parseExpiry(body.expires_at, '/expires_at') ?? null);
      checkGrant(principal, { ownerRole: key.role, parent }, { permissions: body.permissions ?? key.permissions, expiresAt, scope: key.scope });
      const updated = await keys.update(id, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.permissions !== undefined ? { permissions: body.permissions } : {}),
        ...(body.expires_at !== undefined ? { expiresAt } : {}),
      });
      return ok('API key updated', { key: keyView(updated) });
    },
  );
}

function revokeKeyRoute(app: FastifyInstance, options: ApiKeyRoutesOptions): void {
  const { keys } = options;
  app.delete(
    '/api/api-keys/:id',
    {
      schema: {
        summary: 'Revoke an API key (and the keys minted from it)',
        tags: ['api-keys'],
        params: idParams,
        response: { 200: envelopeSchema({ type: 'object', properties: { id: { type: 'string' } } }) },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const key = await visibleKey(options, request.principal, id);
      if (!key) throw notFound(`No API key ${id}`);
      await keys.delete(id);
      return ok('API key revoked', { id });
    },
  );
}
