// Providers of a version (virtualbox, libvirt, vmware_desktop, ...).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { body, errors, params, PROVIDER_PREFIX, slug, text, updateBody, VERSION_PREFIX } from '../http/schemas.ts';
import { messageSchema, providerRow, providerSchema } from '../records.ts';

const providerFields = {
  name: { ...slug, description: 'Provider name as Vagrant knows it: virtualbox, libvirt, vmware_desktop, hyperv, ...' },
  description: text(10_000),
};
type ProviderInput = { name?: string; description?: string };
const P = ['org', 'box', 'version', 'provider'] as const;

export async function providerRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;
  const taken = (name: string) => alreadyExists(`Provider '${name}' already exists in this version`, '/name', name);

  app.post<{ Params: { org: string; box: string; version: string }; Body: ProviderInput & { name: string } }>(
    `${VERSION_PREFIX}/provider`,
    {
      schema: {
        tags: ['providers'],
        summary: 'Add a provider to a version (the box creator, moderators, admins)',
        params: params('org', 'box', 'version'),
        body: body(providerFields, ['name']),
        response: { 201: providerSchema, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const input = request.body;
      const created = await uniquely(
        () =>
          pool.one(sql.type(z.object({ p: providerRow }))`
      insert into providers as p (version_id, name, description) values (${found.version!.id}, ${input.name}, ${input.description ?? ''})
      returning to_jsonb(p) as p`),
        () => taken(input.name),
      );
      return reply.status(201).send(created.p);
    },
  );

  app.get<{ Params: { org: string; box: string; version: string }; Querystring: { page?: number; per_page?: number } }>(
    `${VERSION_PREFIX}/provider`,
    {
      schema: {
        tags: ['providers'],
        summary: "List a version's providers",
        params: params('org', 'box', 'version'),
        querystring: { type: 'object', properties: paginationQuery },
        response: { 200: { type: 'array', items: providerSchema }, ...errors(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      const page = pageOf(request.query);
      const rows = await pool.anyFirst(sql.type(z.object({ p: providerRow }))`
      select to_jsonb(p) as p from providers p where p.version_id = ${found.version!.id} order by lower(p.name) limit ${page.limit} offset ${page.offset}`);
      const total = await pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`select count(*)::int as n from providers where version_id = ${found.version!.id}`,
      );
      describePage(request, reply, page, total);
      return rows;
    },
  );

  app.get<{ Params: { org: string; box: string; version: string; provider: string } }>(
    PROVIDER_PREFIX,
    {
      schema: { tags: ['providers'], summary: 'One provider', params: params(...P), response: { 200: providerSchema, ...errors(401, 403, 404) } },
    },
    async (request) => (await findPath(ctx, request, request.params)).provider!,
  );

  type UpdateRequest = FastifyRequest<{ Params: { org: string; box: string; version: string; provider: string }; Body: ProviderInput }>;
  const update = async (request: UpdateRequest) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = request.body;
    const updated = await uniquely(
      () =>
        pool.one(sql.type(z.object({ p: providerRow }))`
      update providers p set name = coalesce(${input.name ?? null}, name), description = coalesce(${input.description ?? null}, description), updated_at = now()
      where id = ${found.provider!.id} returning to_jsonb(p) as p`),
      () => taken(input.name ?? ''),
    );
    return updated.p;
  };
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route<{ Params: { org: string; box: string; version: string; provider: string }; Body: ProviderInput }>({
      method,
      url: PROVIDER_PREFIX,
      schema: {
        tags: ['providers'],
        summary: 'Update a provider',
        params: params(...P),
        body: updateBody(providerFields),
        response: { 200: providerSchema, ...errors(401, 403, 404, 409, 422) },
      },
      handler: update,
    });
  }

  app.delete<{ Params: { org: string; box: string; version: string; provider: string } }>(
    PROVIDER_PREFIX,
    {
      schema: {
        tags: ['providers'],
        summary: 'Delete a provider with its architectures and files',
        params: params(...P),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const provider = found.provider!;
      await ctx.cleanup.deleteWithFiles({ providerId: provider.id }, async (tx) => {
        await tx.query(sql.unsafe`delete from providers where id = ${provider.id}`);
      });
      return { message: `Provider '${provider.name}' deleted` };
    },
  );
}
