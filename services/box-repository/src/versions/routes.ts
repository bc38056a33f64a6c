// Versions of a box (RubyGems-style strings, ordered as RubyGems orders them: rubygems-version.ts). States: `unreleased` (members only, files replaceable freely), `active` (the
// default: listed in Vagrant metadata once it has a file), `revoked` (members only, not offered to Vagrant).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath, isMember } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { body, BOX_PREFIX, errors, params, text, updateBody, VERSION_PREFIX } from '../http/schemas.ts';
import { messageSchema, VERSION_STATUSES, versionRow, versionSchema } from '../records.ts';
import { versionString } from './rubygems-version.ts';

const versionFields = {
  version_number: versionString,
  description: text(10_000),
  status: { type: 'string', enum: [...VERSION_STATUSES], description: 'unreleased, active (default) or revoked' },
};
type VersionInput = { version_number?: string; description?: string; status?: string };

export async function versionRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;
  const taken = (version: string) =>
    alreadyExists(`Version ${version} already exists (or one RubyGems reads as the same, such as 1.0 for 1.0.0)`, '/version_number', version);

  app.post<{ Params: { org: string; box: string }; Body: VersionInput & { version_number: string } }>(
    `${BOX_PREFIX}/version`,
    {
      schema: {
        tags: ['versions'],
        summary: 'Create a version (the box creator, moderators, admins)',
        params: params('org', 'box'),
        body: body(versionFields, ['version_number']),
        response: { 201: versionSchema, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const input = request.body;
      const created = await uniquely(
        () =>
          pool.one(sql.type(z.object({ v: versionRow }))`
      insert into versions as v (box_id, version_number, description, status)
      values (${found.box!.id}, ${input.version_number}, ${input.description ?? ''}, ${input.status ?? 'active'})
      returning to_jsonb(v) as v`),
        () => taken(input.version_number),
      );
      return reply.status(201).send(created.v);
    },
  );

  app.get<{ Params: { org: string; box: string }; Querystring: { page?: number; per_page?: number } }>(
    `${BOX_PREFIX}/version`,
    {
      schema: {
        tags: ['versions'],
        summary: 'List versions, newest first (non-members see active ones only)',
        params: params('org', 'box'),
        querystring: { type: 'object', properties: paginationQuery },
        response: { 200: { type: 'array', items: versionSchema }, ...errors(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      const page = pageOf(request.query);
      const where = sql.fragment`v.box_id = ${found.box!.id} and (${isMember(found)} or v.status = 'active')`;
      const rows = await pool.anyFirst(sql.type(z.object({ v: versionRow }))`
      select to_jsonb(v) as v from versions v where ${where}
      order by v.version_key desc limit ${page.limit} offset ${page.offset}`);
      const total = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from versions v where ${where}`);
      describePage(request, reply, page, total);
      return rows;
    },
  );

  app.get<{ Params: { org: string; box: string; version: string } }>(
    VERSION_PREFIX,
    {
      schema: {
        tags: ['versions'],
        summary: 'One version',
        params: params('org', 'box', 'version'),
        response: { 200: versionSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => (await findPath(ctx, request, request.params)).version!,
  );

  type UpdateRequest = FastifyRequest<{ Params: { org: string; box: string; version: string }; Body: VersionInput }>;
  const update = async (request: UpdateRequest) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = request.body;
    const updated = await uniquely(
      () =>
        pool.one(sql.type(z.object({ v: versionRow }))`
      update versions v set
        version_number = coalesce(${input.version_number ?? null}, version_number),
        description = coalesce(${input.description ?? null}, description),
        status = coalesce(${input.status ?? null}, status),
        updated_at = now()
      where id = ${found.version!.id} returning to_jsonb(v) as v`),
      () => taken(input.version_number ?? ''),
    );
    return updated.v;
  };
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route<{ Params: { org: string; box: string; version: string }; Body: VersionInput }>({
      method,
      url: VERSION_PREFIX,
      schema: {
        tags: ['versions'],
        summary: 'Update a version: number, description, status (release: status=active; revoke: status=revoked)',
        params: params('org', 'box', 'version'),
        body: updateBody(versionFields),
        response: { 200: versionSchema, ...errors(401, 403, 404, 409, 422) },
      },
      handler: update,
    });
  }

  app.delete<{ Params: { org: string; box: string; version: string } }>(
    VERSION_PREFIX,
    {
      schema: {
        tags: ['versions'],
        summary: 'Delete a version with its providers and files',
        params: params('org', 'box', 'version'),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const version = found.version!;
      await ctx.cleanup.deleteWithFiles({ versionId: version.id }, async (tx) => {
        await tx.query(sql.unsafe`delete from versions where id = ${version.id}`);
      });
      return { message: `Version ${version.version_number} of '${found.org.name}/${found.box!.name}' deleted` };
    },
  );
}
