// Vagrant Cloud API: versions. A version created here starts `unreleased` (the clients release it after the
// upload, and skip releasing a version that comes back active); release makes it active — only once it has a box
// file, so a publish whose upload failed can never leave an active version without one; revoke withdraws it.
// Creation answers 200: Packer 1.6.6 takes any other status as a failure.
import { conflict, unprocessable } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import { findPath, type Found } from '../access/hierarchy.ts';
import { requireBoxManager } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { alreadyExists, uniquely } from '../http/errors.ts';
import { versionRow } from '../records.ts';
import { isVersionString, VERSION_DETAIL, VERSION_MAX_LENGTH } from '../versions/rubygems-version.ts';
import { versionDocumentOf, type ApiFlavour } from './documents.ts';

type VersionParams = { org: string; box: string; version: string };
const versionBody = z.object({
  version: z.object({
    version: z
      .string()
      .max(VERSION_MAX_LENGTH + 1)
      .nullish(),
    description: z.string().max(10_000).nullish(),
  }),
});

function readVersionBody(body: unknown): { version?: string; description?: string } {
  const parsed = versionBody.safeParse(body);
  if (!parsed.success) {
    throw unprocessable('The version must be sent as {"version": {"version": "1.2.3", "description": "..."}}', [
      { pointer: '/version', rule: 'shape', params: {}, detail: 'must be an object with version and description (strings)' },
    ]);
  }
  const { version, description } = parsed.data.version;
  if (version !== undefined && version !== null && !isVersionString(version)) {
    throw unprocessable(`Invalid version '${version}': not a version RubyGems accepts`, [
      { pointer: '/version/version', rule: 'pattern', params: {}, detail: `must be ${VERSION_DETAIL}` },
    ]);
  }
  return { ...(version ? { version } : {}), ...(description !== undefined && description !== null ? { description } : {}) };
}

const taken = (version: string) => alreadyExists(`Version ${version} already exists (or one RubyGems reads as the same)`, '/version/version', version);

async function setStatus(ctx: ServiceContext, found: Found, to: 'active' | 'revoked'): Promise<void> {
  const version = found.version!;
  requireBoxManager(found, found.box!, found.org.name);
  if (to === 'active' && version.status === 'active') throw conflict(`Version ${version.version_number} has already been released`);
  if (to === 'revoked' && version.status !== 'active')
    throw conflict(`Version ${version.version_number} is ${version.status}: only a released version can be revoked`);
  await ctx.pool.transaction(async (tx) => {
    // The version's files are checked and the status changed under one lock: an upload cannot slip in between.
    await tx.query(sql.unsafe`select 1 from versions where id = ${version.id} for update`);
    const hasFile = await tx.exists(sql.unsafe`
      select 1 from providers p join architectures a on a.provider_id = p.id join files f on f.architecture_id = a.id where p.version_id = ${version.id}`);
    if (to === 'active' && !hasFile)
      throw conflict(`Version ${version.version_number} has no box file yet: upload one (vagrant cloud provider upload, or publish again) before releasing it`);
    await tx.query(sql.unsafe`update versions set status = ${to}, updated_at = now() where id = ${version.id}`);
  });
}

export function versionRoutes(app: FastifyInstance, ctx: ServiceContext, flavour: ApiFlavour): void {
  app.post<{ Params: { org: string; box: string } }>('/box/:org/:box/versions', async (request) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = readVersionBody(request.body);
    if (!input.version)
      throw unprocessable('A new version needs its version string', [{ pointer: '/version/version', rule: 'required', params: {}, detail: 'is required' }]);
    const created = await uniquely(
      () =>
        ctx.pool.one(sql.type(z.object({ v: versionRow }))`
      insert into versions as v (box_id, version_number, description, status) values (${found.box!.id}, ${input.version!}, ${input.description ?? ''}, 'unreleased')
      returning to_jsonb(v) as v`),
      () => taken(input.version!),
    );
    return versionDocumentOf(ctx, request, { ...found, version: created.v }, flavour);
  });

  const V = '/box/:org/:box/version/:version';
  app.get<{ Params: VersionParams }>(V, async (request) => versionDocumentOf(ctx, request, await findPath(ctx, request, request.params), flavour));

  app.put<{ Params: VersionParams }>(V, async (request) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const input = readVersionBody(request.body);
    const updated = await uniquely(
      () =>
        ctx.pool.one(sql.type(z.object({ v: versionRow }))`
      update versions v set version_number = coalesce(${input.version ?? null}, version_number), description = coalesce(${input.description ?? null}, description), updated_at = now()
      where id = ${found.version!.id} returning to_jsonb(v) as v`),
      () => taken(input.version ?? ''),
    );
    return versionDocumentOf(ctx, request, { ...found, version: updated.v }, flavour);
  });

  app.delete<{ Params: VersionParams }>(V, async (request) => {
    const found = await findPath(ctx, request, request.params);
    requireBoxManager(found, found.box!, found.org.name);
    const document = await versionDocumentOf(ctx, request, found, flavour);
    await ctx.cleanup.deleteWithFiles({ versionId: found.version!.id }, async (tx) => {
      await tx.query(sql.unsafe`delete from versions where id = ${found.version!.id}`);
    });
    return document;
  });

  for (const [action, to] of [
    ['release', 'active'],
    ['revoke', 'revoked'],
  ] as const) {
    app.put<{ Params: VersionParams }>(`${V}/${action}`, async (request) => {
      const found = await findPath(ctx, request, request.params);
      await setStatus(ctx, found, to);
      return versionDocumentOf(ctx, request, await findPath(ctx, request, request.params), flavour);
    });
  }
}
