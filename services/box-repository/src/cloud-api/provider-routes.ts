// Vagrant Cloud API: providers of a version. v1 addresses a provider by name and gives it one architecture
// (`unknown`, which Vagrant ≥ 2.4 takes as "any"); v2 adds the architecture segment and `architecture` /
// `default_architecture` in the body. The checksum given here is what the upload is verified against.
// Creation answers 200: Packer 1.6.6 takes any other status as a failure.
import { notFound, unprocessable } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { findPath, type Found } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { SLUG_PATTERN } from '../http/schemas.ts';
import { int8 } from '../records.ts';
import { parseClientChecksum } from '../files/upload.ts';
import { providerDocumentOf, type ApiFlavour } from './documents.ts';

/** The architecture of a provider created through v1 (or v2 without one). */
export const V1_ARCHITECTURE = 'unknown';
const slugPattern = new RegExp(SLUG_PATTERN);

export type ProviderParams = { org: string; box: string; version: string; provider: string; arch?: string };

const providerBody = z.object({
  provider: z.object({
    name: z.string().max(100).nullish(),
    url: z.string().max(2000).nullish(),
    checksum: z.string().max(200).nullish(),
    checksum_type: z.string().max(20).nullish(),
    architecture: z.string().max(100).nullish(),
    default_architecture: z.boolean().nullish(),
  }),
});
type ProviderInput = z.output<typeof providerBody>['provider'];

function readProviderBody(body: unknown): ProviderInput {
  const parsed = providerBody.safeParse(body);
  if (!parsed.success) {
    throw unprocessable('The provider must be sent as {"provider": {"name", "checksum", "checksum_type", "architecture", "default_architecture"}}', [
      {
        pointer: '/provider',
        rule: 'shape',
        params: {},
        detail: 'must be an object with name, checksum, checksum_type, architecture (strings) and default_architecture (boolean)',
      },
    ]);
  }
  const input = parsed.data.provider;
  if (input.url) {
    throw unprocessable('Boxes hosted elsewhere (provider url) are not supported: upload the box file to this repository', [
      { pointer: '/provider/url', rule: 'unsupported', params: {}, detail: 'must be empty' },
    ]);
  }
  for (const [field, value] of [
    ['name', input.name],
    ['architecture', input.architecture],
  ] as const) {
    if (value && !slugPattern.test(value))
      throw unprocessable(`Invalid ${field} '${value}'`, [
        { pointer: `/provider/${field}`, rule: 'pattern', params: { pattern: SLUG_PATTERN }, detail: 'letters, digits, "-" and "_" only, 1 to 100 characters' },
      ]);
  }
  return input;
}

/** The path down to an architecture: v2 names it, v1 means the provider's default one. */
export async function findArchitecture(ctx: ServiceContext, request: FastifyRequest, params: ProviderParams): Promise<Found> {
  if (params.arch !== undefined) return findPath(ctx, request, params);
  const found = await findPath(ctx, request, params);
  const arch = await ctx.pool.maybeOneFirst(sql.type(z.object({ name: z.string() }))`
    select name from architectures where provider_id = ${found.provider!.id} order by default_box desc, lower(name) limit 1`);
  if (arch === null) throw notFound(`Provider '${found.provider!.name}' of version ${found.version!.version_number} has no architecture`);
  return findPath(ctx, request, { ...params, arch });
}

async function insertProvider(tx: DatabaseTransactionConnection, found: Found, input: ProviderInput, flavour: ApiFlavour): Promise<void> {
  const name = input.name!;
  const architecture = (flavour.v2 && input.architecture) || V1_ARCHITECTURE;
  const existing = await tx.maybeOneFirst(sql.type(z.object({ id: int8 }))`
    select id from providers where version_id = ${found.version!.id} and lower(name) = lower(${name}) for update`);
  if (existing !== null && !flavour.v2)
    throw alreadyExists(`Provider '${name}' already exists in version ${found.version!.version_number}`, '/provider/name', name);
  const providerId =
    existing ??
    (await tx.oneFirst(sql.type(z.object({ id: int8 }))`
    insert into providers (version_id, name) values (${found.version!.id}, ${name}) returning id`));
  if (input.default_architecture === true)
    await tx.query(sql.unsafe`update architectures set default_box = false, updated_at = now() where provider_id = ${providerId} and default_box`);
  const checksum = parseClientChecksum(input.checksum ?? undefined, input.checksum_type ?? undefined);
  await uniquely(
    () =>
      tx.query(sql.unsafe`
    insert into architectures (provider_id, name, default_box, declared_checksum_type, declared_checksum)
    values (${providerId}, ${architecture}, coalesce(${input.default_architecture ?? null}::boolean, not exists (select 1 from architectures where provider_id = ${providerId} and default_box)),
            ${checksum?.type ?? null}, ${checksum?.value ?? null})`),
    () =>
      alreadyExists(
        `Provider '${name}' already has architecture '${architecture}' in version ${found.version!.version_number}`,
        '/provider/architecture',
        architecture,
      ),
  );
}

export function providerRoutes(app: FastifyInstance, ctx: ServiceContext, flavour: ApiFlavour): void {
  const V = '/box/:org/:box/version/:version';
  const P = flavour.v2 ? `${V}/provider/:provider/:arch` : `${V}/provider/:provider`;
  const document = async (request: FastifyRequest, params: ProviderParams) => {
    const found = await findArchitecture(ctx, request, params);
    const entry = await providerDocumentOf(ctx, request, found, found.provider!.name, flavour.v2 ? found.architecture!.name : undefined, flavour);
    if (!entry) throw notFound(`Provider '${params.provider}' not found`);
    return entry;
  };

  app.post<{ Params: { org: string; box: string; version: string } }>(`${V}/providers`, async (request) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = readProviderBody(request.body);
    if (!input.name) throw unprocessable('A new provider needs its name', [{ pointer: '/provider/name', rule: 'required', params: {}, detail: 'is required' }]);
    await ctx.pool.transaction((tx) => insertProvider(tx, found, input, flavour));
    return document(request, { ...request.params, provider: input.name, ...(flavour.v2 ? { arch: input.architecture || V1_ARCHITECTURE } : {}) });
  });

  app.get<{ Params: ProviderParams }>(P, async (request) => document(request, request.params));

  app.put<{ Params: ProviderParams }>(P, async (request) => {
    const found = await findArchitecture(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = readProviderBody(request.body);
    const checksum = parseClientChecksum(input.checksum ?? undefined, input.checksum_type ?? undefined);
    await ctx.pool.transaction(async (tx) => {
      if (checksum)
        await tx.query(
          sql.unsafe`update architectures set declared_checksum_type = ${checksum.type}, declared_checksum = ${checksum.value}, updated_at = now() where id = ${found.architecture!.id}`,
        );
      if (input.name && input.name !== found.provider!.name) {
        await uniquely(
          () => tx.query(sql.unsafe`update providers set name = ${input.name!}, updated_at = now() where id = ${found.provider!.id}`),
          () => alreadyExists(`Provider '${input.name}' already exists in version ${found.version!.version_number}`, '/provider/name', input.name!),
        );
      }
    });
    return document(request, { ...request.params, provider: input.name || found.provider!.name });
  });

  app.delete<{ Params: ProviderParams }>(P, async (request) => {
    const found = await findArchitecture(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const entry = await document(request, request.params);
    const scope = flavour.v2 ? { architectureId: found.architecture!.id } : { providerId: found.provider!.id };
    await ctx.cleanup.deleteWithFiles(scope, async (tx) => {
      if (flavour.v2) {
        await tx.query(sql.unsafe`delete from architectures where id = ${found.architecture!.id}`);
        await tx.query(
          sql.unsafe`delete from providers p where p.id = ${found.provider!.id} and not exists (select 1 from architectures a where a.provider_id = p.id)`,
        );
      } else {
        await tx.query(sql.unsafe`delete from providers where id = ${found.provider!.id}`);
      }
    });
    return entry;
  });
}
