// Box metadata in the Vagrant Cloud format, at the seed's path and at the two paths the Vagrant client asks
// (`{server}/{org}/{box}` for 2.3, `{server}/api/v2/vagrant/{org}/{box}` for 2.4), for any User-Agent, GET and
// HEAD, always `application/json`. Listed: `active` versions that have at least one file; for each provider, one
// entry per architecture with the server-computed sha256, the default architecture's entry last (Vagrant 2.3
// keeps the last entry of a provider name). Download URLs are absolute, on the host asked, and stable. A strong
// ETag (hash of the document) answers If-None-Match with 304; the document is cached per box (metadata-cache.ts).
import { notFound, problemSchema } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { canReadBox, canReadOrganization, isBoxListed, hidden, roleIn, type Access } from '../access/hierarchy.ts';
import { principalOf } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf, downloadUrl } from '../http/base-url.ts';
import { errors, params, RESERVED_ORGANIZATION_NAMES } from '../http/schemas.ts';
import { matchesAnyEtag } from '../files/serve-file.ts';
import type { CachedDocument } from './metadata-cache.ts';
import { boxRow, int8, organizationRow, type Box } from '../records.ts';

const entryRow = z.object({
  version: z.string(),
  version_description: z.string(),
  provider: z.string(),
  architecture: z.string(),
  default_box: z.boolean(),
  file_name: z.string(),
  size: int8,
  sha256: z.string(),
});

const providerEntrySchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    url: { type: 'string', format: 'uri' },
    checksum: { type: 'string' },
    checksum_type: { type: 'string' },
    architecture: { type: 'string' },
    default_architecture: { type: 'boolean' },
    file_size: { type: 'integer' },
  },
} as const;

export const metadataSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', description: '`org/box`' },
    description: { type: 'string' },
    versions: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          version: { type: 'string' },
          status: { type: 'string' },
          description: { type: 'string' },
          providers: { type: 'array', items: providerEntrySchema },
        },
      },
    },
  },
} as const;

const htmlPage = { 'text/html': { schema: { type: 'string', description: 'An HTML page of the web console' } } };
const problemOrPage = (description: string) => ({ description, content: { 'application/problem+json': { schema: problemSchema }, ...htmlPage } });
/**
 * What `/{org}/{box}` also serves: a browser's 303 to the box's console page (clients that follow it get that HTML
 * page), and the console's own pages at the reserved organization `console` (`/console/sign-in`, `/console/sign-up`,
 * `/console/users`, `/console/webhooks`: HTML, their refusals too).
 */
const consoleAnswers = {
  200: {
    description: 'The box metadata (JSON); or an HTML page: the console page a browser is sent to, or a console page at `/console/…`',
    content: { 'application/json': { schema: metadataSchema }, ...htmlPage },
  },
  303: { description: "Accept names text/html (a browser): see Location, the box's console page" },
  401: problemOrPage('Credentials refused (a console page: sign in first)'),
  403: problemOrPage('Not allowed for this caller (a console page: an HTML refusal)'),
  404: problemOrPage('Not found'),
};

const accessRow = z.object({
  org: organizationRow,
  member_role: z.enum(['admin', 'moderator', 'user']).nullable(),
  box: boxRow.nullable(),
  metadata_version: int8.nullable(),
});

const entriesRow = z.object({ metadata_version: int8, entries: z.array(entryRow) });

/**
 * The caller's read check, on every request (one small query: the organization, the caller's membership, the
 * box and its metadata_version), then the document from the cache, or built and cached when the version moved.
 */
export async function metadataDocument(
  ctx: ServiceContext,
  request: FastifyRequest,
  orgName: string,
  boxName: string,
): Promise<{ document: CachedDocument; isPublic: boolean }> {
  const principal = await principalOf(ctx, request);
  const base = baseUrlOf(ctx, request);
  const anonymous: Access = { principal: null, role: null, isGlobalAdmin: false };
  if (!principal) {
    // Anonymous and readable by anyone: from memory while this replica listens for changes (metadata-cache.ts).
    const entry = ctx.metadataCache.trusted(orgName, boxName, base);
    if (entry && canReadOrganization(entry.org, anonymous) && canReadBox(entry.org, entry.box, anonymous)) {
      return { document: entry.document, isPublic: isBoxListed(entry.org, entry.box) };
    }
  }
  const generation = ctx.metadataCache.generation;
  const userId = principal?.kind === 'user' ? principal.id : null;
  const row = await ctx.pool.maybeOne(sql.type(accessRow)`
    select to_jsonb(o) as org,
           (select m.role from memberships m where m.organization_id = o.id and m.user_id = ${userId}::uuid) as member_role,
           to_jsonb(b) as box, b.metadata_version
    from organizations o
    left join boxes b on b.organization_id = o.id and lower(b.name) = lower(${boxName})
    where lower(o.name) = lower(${orgName})`);
  // As findPath: a private organization or box answers as a missing one (401 anonymous, 404 signed in).
  if (!row) hidden({ principal }, `Organization '${orgName}'`);
  const access: Access = { principal, role: roleIn(principal, row.org.id, row.member_role), isGlobalAdmin: principal?.kind === 'user' && principal.isAdmin };
  if (!canReadOrganization(row.org, access)) hidden(access, `Organization '${orgName}'`);
  const box = row.box;
  if (!box || row.metadata_version === null || !canReadBox(row.org, box, access)) hidden(access, `Box '${orgName}/${boxName}'`);
  const key = JSON.stringify([row.org.name, box.name, box.description]);
  let document = ctx.metadataCache.get(box.id, base, key, row.metadata_version);
  if (!document) {
    const built = await buildDocument(ctx, row.org.name, box, base);
    document = ctx.metadataCache.set(box.id, base, key, built.version, built.body);
  }
  // Trusted only when the rows and the document are of one version (a change in between: the next read rebuilds).
  if (document.version === row.metadata_version && canReadOrganization(row.org, anonymous) && canReadBox(row.org, box, anonymous)) {
    ctx.metadataCache.trust(orgName, boxName, base, { org: row.org, box, document }, generation);
  }
  return { document, isPublic: isBoxListed(row.org, box) };
}

/** The box's listed entries, newest version first, as the Vagrant document (JSON text) with the version it shows. */
async function buildDocument(ctx: ServiceContext, orgName: string, box: Box, base: string): Promise<{ version: number; body: string }> {
  const row = await ctx.pool.maybeOne(sql.type(entriesRow)`
    select b.metadata_version,
           coalesce((
             select jsonb_agg(jsonb_build_object(
                      'version', v.version_number, 'version_description', v.description, 'provider', p.name, 'architecture', a.name,
                      'default_box', a.default_box, 'file_name', f.file_name, 'size', f.size, 'sha256', f.sha256)
                    order by v.version_key desc, lower(p.name), a.default_box, lower(a.name))
             from versions v
             join providers p on p.version_id = v.id
             join architectures a on a.provider_id = p.id
             join files f on f.architecture_id = a.id
             where v.box_id = b.id and v.status = 'active'), '[]'::jsonb) as entries
    from boxes b where b.id = ${box.id}`);
  if (!row) throw notFound(`Box '${orgName}/${box.name}' not found`);
  const versions: { version: string; status: string; description: string; providers: object[] }[] = [];
  for (const entry of row.entries) {
    let version = versions.at(-1);
    if (version?.version !== entry.version) {
      version = { version: entry.version, status: 'active', description: entry.version_description, providers: [] };
      versions.push(version);
    }
    version.providers.push({
      name: entry.provider,
      url: downloadUrl(base, {
        org: orgName,
        box: box.name,
        version: entry.version,
        provider: entry.provider,
        arch: entry.architecture,
        fileName: entry.file_name,
      }),
      checksum: entry.sha256,
      checksum_type: 'sha256',
      architecture: entry.architecture,
      default_architecture: entry.default_box,
      file_size: entry.size,
    });
  }
  const document = { name: `${orgName}/${box.name}`, description: box.description, versions };
  return { version: row.metadata_version, body: JSON.stringify(document) };
}

export async function metadataRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const handler = async (request: FastifyRequest<{ Params: { org: string; box: string } }>, reply: FastifyReply) => {
    const { org, box } = request.params;
    // `/{org}/{box}` also matches any two-segment path the service doesn't serve, like /api/unknown.
    if (RESERVED_ORGANIZATION_NAMES.includes(org.toLowerCase())) throw notFound(`No route for ${request.method} ${request.url.split('?')[0]}`);
    const { document, isPublic } = await metadataDocument(ctx, request, org, box);
    reply.header('etag', document.etag);
    reply.header('cache-control', isPublic ? 'public, no-cache' : 'private, no-cache');
    reply.type('application/json; charset=utf-8');
    const ifNoneMatch = request.headers['if-none-match'];
    if (typeof ifNoneMatch === 'string' && matchesAnyEtag(ifNoneMatch, document.etag)) return reply.status(304).send();
    return reply.send(document.body); // JSON already: fastify sends a Buffer as it is
  };
  const schema = (summary: string, hide = false) => ({
    tags: ['metadata'],
    summary,
    hide,
    params: params('org', 'box'),
    response: { 200: metadataSchema, ...errors(401, 403, 404) },
  });
  app.get('/api/organization/:org/box/:box/metadata', { schema: schema('Box metadata in the Vagrant format') }, handler);
  app.get('/api/v2/vagrant/:org/:box', { schema: schema('Box metadata for Vagrant 2.4 (`vagrant box add org/box` with VAGRANT_SERVER_URL)') }, handler);
  // A person who opens `{server}/{org}/{box}` in a browser gets the box's console page; Vagrant asks for JSON
  // (Accept: application/json), curl and other tools accept anything: both get the metadata.
  const vagrant23 = schema(
    "Box metadata for Vagrant 2.3 (`vagrant box add org/box` with VAGRANT_SERVER_URL); browsers asking for HTML are sent to the box's page",
  );
  app.get('/:org/:box', { schema: { ...vagrant23, response: { ...vagrant23.response, ...consoleAnswers } } }, async (request, reply) => {
    const { org, box } = request.params as { org: string; box: string };
    if (/\btext\/html\b/i.test(request.headers.accept ?? '') && !RESERVED_ORGANIZATION_NAMES.includes(org.toLowerCase())) {
      return reply.redirect(`/${encodeURIComponent(org)}/boxes/${encodeURIComponent(box)}`, 303);
    }
    return handler(request as FastifyRequest<{ Params: { org: string; box: string } }>, reply);
  });
}
