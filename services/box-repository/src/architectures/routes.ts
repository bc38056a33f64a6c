// Architectures of a provider (amd64, arm64, ...). At most one per provider is the default (`default_box`):
// the first one created becomes it unless told otherwise, and making another the default moves the flag.
// Vagrant 2.4 picks the host's architecture, else the default; 2.3 takes the last entry (see metadata).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { findPath } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { describePage, pageOf, paginationQuery } from '../http/pagination.ts';
import { ARCH_PREFIX, body, errors, params, PROVIDER_PREFIX, slug, updateBody } from '../http/schemas.ts';
import { architectureRow, architectureSchema, messageSchema } from '../records.ts';

const archFields = {
  name: { ...slug, description: 'amd64, arm64, i386, ... (Vagrant 2.4 matches it against the host)' },
  default_box: { type: 'boolean', description: "This provider's default architecture (the first one created is, unless false)." },
};
type ArchInput = { name?: string; default_box?: boolean };
const A = ['org', 'box', 'version', 'provider', 'arch'] as const;

const clearDefault = (tx: CommonQueryMethods, providerId: number) =>
  tx.query(sql.unsafe`update architectures set default_box = false, updated_at = now() where provider_id = ${providerId} and default_box`);

export async function architectureRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  const { pool } = ctx;
  const taken = (name: string) => alreadyExists(`Architecture '${name}' already exists for this provider`, '/name', name);

  app.post<{ Params: { org: string; box: string; version: string; provider: string }; Body: ArchInput & { name: string } }>(
    `${PROVIDER_PREFIX}/architecture`,
    {
      schema: {
        tags: ['architectures'],
        summary: 'Add an architecture to a provider (the box creator, moderators, admins)',
        params: params('org', 'box', 'version', 'provider'),
        body: body(archFields, ['name']),
        response: { 201: architectureSchema, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const input = request.body;
      const providerId = found.provider!.id;
      const created = await uniquely(
        () =>
          pool.transaction(async (tx) => {
            // Lock the provider so two first architectures can't both become the default.
            await tx.query(sql.unsafe`select 1 from providers where id = ${providerId} for update`);
            if (input.default_box === true) await clearDefault(tx, providerId);
            return tx.one(sql.type(z.object({ a: architectureRow }))`
        insert into architectures as a (provider_id, name, default_box)
        values (${providerId}, ${input.name},
                coalesce(${input.default_box ?? null}::boolean, not exists (select 1 from architectures where provider_id = ${providerId} and default_box)))
        returning to_jsonb(a) as a`);
          }),
        () => taken(input.name),
      );
      return reply.status(201).send(created.a);
    },
  );

  app.get<{ Params: { org: string; box: string; version: string; provider: string }; Querystring: { page?: number; per_page?: number } }>(
    `${PROVIDER_PREFIX}/architecture`,
    {
      schema: {
        tags: ['architectures'],
        summary: "List a provider's architectures",
        params: params('org', 'box', 'version', 'provider'),
        querystring: { type: 'object', properties: paginationQuery },
        response: { 200: { type: 'array', items: architectureSchema }, ...errors(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const found = await findPath(ctx, request, request.params);
      const page = pageOf(request.query);
      const rows = await pool.anyFirst(sql.type(z.object({ a: architectureRow }))`
      select to_jsonb(a) as a from architectures a where a.provider_id = ${found.provider!.id} order by lower(a.name) limit ${page.limit} offset ${page.offset}`);
      const total = await pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`select count(*)::int as n from architectures where provider_id = ${found.provider!.id}`,
      );
      describePage(request, reply, page, total);
      return rows;
    },
  );

  app.get<{ Params: { org: string; box: string; version: string; provider: string; arch: string } }>(
    ARCH_PREFIX,
    {
      schema: { tags: ['architectures'], summary: 'One architecture', params: params(...A), response: { 200: architectureSchema, ...errors(401, 403, 404) } },
    },
    async (request) => (await findPath(ctx, request, request.params)).architecture!,
  );

  type UpdateRequest = FastifyRequest<{ Params: { org: string; box: string; version: string; provider: string; arch: string }; Body: ArchInput }>;
  const update = async (request: UpdateRequest) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = request.body;
    const arch = found.architecture!;
    const updated = await uniquely(
      () =>
        pool.transaction(async (tx) => {
          await tx.query(sql.unsafe`select 1 from providers where id = ${arch.provider_id} for update`);
          if (input.default_box === true) await clearDefault(tx, arch.provider_id);
          return tx.one(sql.type(z.object({ a: architectureRow }))`
        update architectures a set name = coalesce(${input.name ?? null}, name), default_box = coalesce(${input.default_box ?? null}::boolean, default_box), updated_at = now()
        where id = ${arch.id} returning to_jsonb(a) as a`);
        }),
      () => taken(input.name ?? ''),
    );
    return updated.a;
  };
  for (const method of ['PUT', 'PATCH'] as const) {
    app.route<{ Params: { org: string; box: string; version: string; provider: string; arch: string }; Body: ArchInput }>({
      method,
      url: ARCH_PREFIX,
      schema: {
        tags: ['architectures'],
        summary: 'Update an architecture (default_box=true makes it the default)',
        params: params(...A),
        body: updateBody(archFields),
        response: { 200: architectureSchema, ...errors(401, 403, 404, 409, 422) },
      },
      handler: update,
    });
  }

  app.delete<{ Params: { org: string; box: string; version: string; provider: string; arch: string } }>(
    ARCH_PREFIX,
    {
      schema: {
        tags: ['architectures'],
        summary: 'Delete an architecture with its file',
        params: params(...A),
        response: { 200: messageSchema, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const found = await findPath(ctx, request, request.params);
      requireBoxManager(found, found.box!, found.org.name);
      const arch = found.architecture!;
      await ctx.cleanup.deleteWithFiles({ architectureId: arch.id }, async (tx) => {
        await tx.query(sql.unsafe`delete from architectures where id = ${arch.id}`);
      });
      return { message: `Architecture '${arch.name}' deleted` };
    },
  );
}
