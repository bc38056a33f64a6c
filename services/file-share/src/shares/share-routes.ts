// GET/POST /api/shares, GET/DELETE /api/shares/{id}: making, listing and revoking share links (kind `share`: read a
// file or folder) and file requests (kind `request`: upload into a folder).
// Who may make one: any signed-in caller holding, on that path, the permission the link delegates (share: downloads,
// request: uploads) — a user for itself, a key within its own permissions and folder scope. The link is re-checked
// against its creator at every use (link-access.ts). Who sees and revokes one: its creator (a key: the links made
// with it), and admins signed in as themselves every link.
import { badRequest, hashPassword, HttpError, notFound } from '@boxyard/kit';
import { sendPage } from '../console/page-security.ts';
import { renderSignInPage } from '../console/sign-in.ts';
import type { FastifyInstance } from 'fastify';
import { requirePermission, requireUser, type Principal } from '../auth/principal.ts';
import type { FileShareConfig } from '../config.ts';
import { envelopeSchema, ok } from '../http/envelope.ts';
import { encodePath, validateSharePath } from '../paths/share-path.ts';
import type { Tree } from '../tree/tree-store.ts';
import type { Activity } from './activity.ts';
import { delegated, linkState } from './link-access.ts';
import { LINK_PREFIX } from './link-routes.ts';
import { renderSharesPage, SHARES_PATH } from './shares-page.ts';
import { SHARE_KINDS, type Arrival, type LinkWithCreator, type ShareKind, type ShareStore } from './share-store.ts';

export interface ShareRoutesOptions {
  tree: Tree;
  shares: ShareStore;
  activity: Activity;
  publicUrl: string;
  limits: FileShareConfig['shares'];
  maxUploadBytes: number;
}

const MIN_PASSWORD = 8;
const MAX_PASSWORD = 1024;

/** The link's URL: a folder's with a trailing slash, a file's ending in its name (so `curl -O` and wget name it right). */
export const linkUrl = (publicUrl: string, link: LinkWithCreator) =>
  `${publicUrl}${LINK_PREFIX}${link.token}/${link.entry_kind === 'file' ? encodePath(link.path.slice(link.path.lastIndexOf('/') + 1), false) : ''}`;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const shareView = (publicUrl: string, link: LinkWithCreator) => ({
  id: link.id,
  kind: link.kind,
  path: link.path,
  is_directory: link.entry_kind === 'dir',
  url: linkUrl(publicUrl, link),
  state: linkState(link),
  expires_at: iso(link.expires_at),
  has_password: link.password_hash !== null,
  max_uses: link.max_uses,
  uses: link.uses,
  max_file_bytes: link.max_file_bytes,
  created_by: link.creator_username,
  created_with_key: link.created_by_key,
  created_at: iso(link.created_at),
  last_used_at: iso(link.last_used_at),
  revoked_at: iso(link.revoked_at),
});

const date = { type: ['string', 'null'], format: 'date-time' };
const shareSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    kind: { type: 'string', enum: [...SHARE_KINDS] },
    path: { type: 'string' },
    is_directory: { type: 'boolean' },
    url: { type: 'string', description: 'The link (its token is the secret: whoever has it, and the password if any, gets in)' },
    state: { type: 'string', enum: ['active', 'revoked', 'expired', 'exhausted', 'creator-lost'] },
    expires_at: date,
    has_password: { type: 'boolean' },
    max_uses: { type: ['integer', 'null'] },
    uses: { type: 'integer' },
    max_file_bytes: { type: ['integer', 'null'] },
    created_by: { type: ['string', 'null'] },
    created_with_key: { type: ['string', 'null'] },
    created_at: date,
    last_used_at: date,
    revoked_at: date,
  },
};
const arrivalSchema = { type: 'object', properties: { path: { type: 'string' }, size: { type: 'integer' }, checksum: { type: 'string' }, arrived_at: date } };
const idParams = { type: 'object', properties: { id: { type: 'string', format: 'uuid' } }, required: ['id'] };

interface CreateBody {
  path: string;
  kind?: ShareKind;
  expires_at?: string;
  expires_in_seconds?: number;
  password?: string;
  max_uses?: number;
  max_file_bytes?: number;
}

const invalid = (pointer: string, detail: string) => badRequest('Invalid share link', [{ pointer, rule: 'share-link', params: {}, detail }]);

function expiryOf(body: CreateBody, limits: FileShareConfig['shares']): Date {
  const now = Date.now();
  if (body.expires_at !== undefined && body.expires_in_seconds !== undefined) throw invalid('/expires_at', 'give expires_at or expires_in_seconds, not both');
  let expires = now + limits.default_expiry_seconds * 1000;
  if (body.expires_in_seconds !== undefined) expires = now + body.expires_in_seconds * 1000;
  if (body.expires_at !== undefined) {
    expires = Date.parse(body.expires_at);
    if (!Number.isFinite(expires)) throw invalid('/expires_at', 'must be an ISO 8601 timestamp');
    if (expires <= now) throw invalid('/expires_at', 'must be in the future');
  }
  if (expires > now + limits.max_expiry_seconds * 1000 + 1000)
    throw invalid(
      body.expires_at !== undefined ? '/expires_at' : '/expires_in_seconds',
      `a link lives at most ${limits.max_expiry_seconds} s (shares.max_expiry_seconds)`,
    );
  return new Date(expires);
}

/** The link if the caller may see and revoke it: its creator (a key: the links made with it), or an admin as itself. */
function visible(principal: Principal, link: LinkWithCreator | null): LinkWithCreator | null {
  const user = requireUser(principal);
  if (!link) return null;
  if (principal.key) return link.created_by_key === principal.key.id ? link : null;
  if (user.role === 'admin') return link;
  return link.created_by === user.id ? link : null;
}

async function create(options: ShareRoutesOptions, principal: Principal, body: CreateBody) {
  const user = requireUser(principal);
  const kind = body.kind ?? 'share';
  const path = validateSharePath(body.path, '/path');
  requirePermission(principal, delegated[kind], path);
  const entry = await options.tree.find(path);
  if (!entry) throw notFound(`${path} does not exist`);
  if (kind === 'request' && entry.kind !== 'dir') throw invalid('/path', 'a file request is made for a folder');
  if (kind === 'share' && body.max_file_bytes !== undefined) throw invalid('/max_file_bytes', 'only a file request takes max_file_bytes');
  if (body.max_file_bytes !== undefined && body.max_file_bytes > options.maxUploadBytes)
    throw invalid('/max_file_bytes', `must be at most uploads.max_bytes (${options.maxUploadBytes})`);
  const expiresAt = expiryOf(body, options.limits);
  if (body.password !== undefined && (body.password.length < MIN_PASSWORD || body.password.length > MAX_PASSWORD)) {
    throw invalid('/password', `must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters`);
  }
  const link = await options.shares.create({
    kind,
    entryId: entry.id,
    createdBy: user.id,
    createdByKey: principal.key?.id ?? null,
    passwordHash: body.password === undefined ? null : await hashPassword(body.password),
    expiresAt,
    maxUses: body.max_uses ?? null,
    maxFileBytes: body.max_file_bytes ?? null,
  });
  await options.activity.created(link);
  return link;
}

function createRoute(app: FastifyInstance, options: ShareRoutesOptions): void {
  const view = (link: LinkWithCreator) => shareView(options.publicUrl, link);
  app.post(
    '/api/shares',
    {
      schema: {
        summary: 'Make a share link (kind `share`, read-only) or a file request (kind `request`, upload-only into a folder)',
        description:
          'Needs, on `path`, the permission the link delegates: `downloads` for a share link, `uploads` for a file request. ' +
          'Expiry: `expires_at` or `expires_in_seconds` (default shares.default_expiry_seconds, at most shares.max_expiry_seconds). ' +
          'A use is one download of a file or one zip (share), one file that arrived (request); listings are not counted.',
        tags: ['share links'],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['path'],
          properties: {
            path: { type: 'string', maxLength: 4096 },
            kind: { type: 'string', enum: [...SHARE_KINDS], default: 'share' },
            expires_at: { type: 'string', maxLength: 64 },
            expires_in_seconds: { type: 'integer', minimum: 60, maximum: 100 * 365 * 86400 },
            password: { type: 'string', maxLength: MAX_PASSWORD },
            max_uses: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
            max_file_bytes: { type: 'integer', minimum: 1 },
          },
        },
        // 404: the path to share does not exist (found by the fuzzer as an undocumented status).
        response: { 201: envelopeSchema({ type: 'object', properties: { share: shareSchema } }), 404: {} },
      },
    },
    async (request, reply) => {
      const link = await create(options, request.principal, request.body as CreateBody);
      return reply.status(201).send(ok(link.kind === 'request' ? 'File request created' : 'Share link created', { share: view(link) }));
    },
  );
}

function listRoute(app: FastifyInstance, options: ShareRoutesOptions): void {
  const view = (link: LinkWithCreator) => shareView(options.publicUrl, link);
  app.get(
    '/api/shares',
    {
      schema: {
        summary: "The caller's links, newest first (a key: the links made with it; admins: `?all=true` for everyone's)",
        tags: ['share links'],
        querystring: { type: 'object', properties: { all: { type: 'boolean', default: false } } },
        response: { 200: envelopeSchema({ type: 'object', properties: { shares: { type: 'array', items: shareSchema } } }) },
      },
    },
    async (request) => {
      const principal = request.principal;
      const user = requireUser(principal);
      const all = (request.query as { all: boolean }).all;
      if (all && (principal.key || user.role !== 'admin')) throw new HttpError(403, 'Insufficient permissions: administrators only');
      const links = await options.shares.list(principal.key ? { keyId: principal.key.id } : all ? {} : { userId: user.id });
      return ok('Share links', { shares: links.map(view) });
    },
  );
}

function getRoute(app: FastifyInstance, options: ShareRoutesOptions): void {
  const view = (link: LinkWithCreator) => shareView(options.publicUrl, link);
  app.get(
    '/api/shares/:id',
    {
      schema: {
        summary: 'One link, with the files that arrived through it (file requests, newest first, at most 100)',
        tags: ['share links'],
        params: idParams,
        response: { 200: envelopeSchema({ type: 'object', properties: { share: shareSchema, arrivals: { type: 'array', items: arrivalSchema } } }) },
      },
    },
    async (request) => {
      const link = visible(request.principal, await options.shares.byId((request.params as { id: string }).id));
      if (!link) throw notFound('No such share link');
      const arrivals = (await options.shares.arrivals(link.id)).map((a) => ({ path: a.path, size: a.size, checksum: a.sha256, arrived_at: iso(a.arrived_at) }));
      return ok('Share link', { share: view(link), arrivals });
    },
  );
}

function pageRoute(app: FastifyInstance, options: ShareRoutesOptions): void {
  const view = (link: LinkWithCreator) => shareView(options.publicUrl, link);
  app.get(SHARES_PATH, { schema: { hide: true, summary: 'The share links page (HTML)', tags: ['console'] } }, async (request, reply) => {
    const principal = request.principal;
    const viewer = { username: principal.user?.username ?? null, via: principal.via, returnTo: SHARES_PATH };
    if (principal.via === 'anonymous' || !principal.user)
      return sendPage(reply.header('www-authenticate', 'Bearer realm="boxyard file-share"'), renderSignInPage(viewer), 401);
    if (principal.via === 'api-key') throw new HttpError(403, 'Insufficient permissions: the share links page is for users signed in as themselves');
    const links = await options.shares.list({ userId: principal.user.id });
    const arrivals = new Map<string, readonly Arrival[]>();
    for (const link of links.filter((l) => l.kind === 'request').slice(0, 100)) arrivals.set(link.id, await options.shares.arrivals(link.id, 20));
    return sendPage(reply, renderSharesPage(viewer, links.map(view), arrivals));
  });
}

function revokeRoute(app: FastifyInstance, options: ShareRoutesOptions): void {
  const view = (link: LinkWithCreator) => shareView(options.publicUrl, link);
  app.delete(
    '/api/shares/:id',
    {
      schema: {
        summary: 'Revoke a link: it answers 410 from now on, on every replica',
        tags: ['share links'],
        params: idParams,
        response: { 200: envelopeSchema({ type: 'object', properties: { share: shareSchema } }) },
      },
    },
    async (request) => {
      const found = visible(request.principal, await options.shares.byId((request.params as { id: string }).id));
      if (!found) throw notFound('No such share link');
      if (await options.shares.revoke(found.id)) await options.activity.revoked(found);
      return ok('Share link revoked', { share: view((await options.shares.byId(found.id))!) });
    },
  );
}

export async function shareRoutes(app: FastifyInstance, options: ShareRoutesOptions): Promise<void> {
  createRoute(app, options);
  listRoute(app, options);
  getRoute(app, options);
  pageRoute(app, options);
  revokeRoute(app, options);
}
