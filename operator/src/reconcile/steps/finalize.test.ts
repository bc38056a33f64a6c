import { describe, expect, it } from 'vitest';
import type { ServiceResource, ServiceStatus } from '../../crds/types.ts';
import { secretSources } from '../../desired/common.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { accessKeyDigest } from '../created-data.ts';
import { DATABASE_URL, boxes, fakeWorld, secret, type SecretObject } from './fake-fixtures.ts';
import { finalize } from './finalize.ts';
import { FINALIZER } from './finalizer.ts';
import { ensureGeneratedSecrets } from './generated-secrets.ts';

const NAME = 'boxes-box-repository';
const CREATED: ServiceStatus = {
  database: { createdSchemas: [{ database: 'postgres.team:5432/boxyard', schema: 'box_repository' }] },
  storage: { createdBuckets: [{ endpoint: 'minio.storage:9000', bucket: 'boxes', accessKeyDigest: accessKeyDigest('AKIA1') }] },
};

/** A resource under deletion (finalizer held), its Secrets, its Deployment and generated Secrets in place. */
async function deleting(spec: Parameters<typeof boxes>[0] = {}, status?: ServiceStatus) {
  const world = fakeWorld();
  world.client.seed(secret('db', { url: DATABASE_URL }));
  world.client.seed(secret('s3', { accessKey: 'AKIA1', secretKey: 'shh' }));
  const live = world.client.seed({ ...boxes(spec, { finalizers: [FINALIZER] }), status });
  await ensureGeneratedSecrets(world, live, secretSources(world.kind, live));
  world.client.seed({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: NAME, namespace: 'team' } });
  await world.client.delete(resources.boxRepository, 'team', 'boxes');
  const resource = world.client.peek<ServiceResource>(resources.boxRepository, 'team', 'boxes')!;
  const gone = () => world.client.peek(resources.boxRepository, 'team', 'boxes') === undefined;
  return { world, resource, gone, writesBefore: world.client.writes().length };
}

describe('finalize (fake client)', () => {
  it('deletionPolicy Retain keeps the data and the generated Secrets, released for a re-created resource', async () => {
    const { world, resource, gone } = await deleting();
    const before = world.client.peek<SecretObject>(resources.secret, 'team', `${NAME}-admin`)!;
    expect(await finalize(world, resource)).toBe(true);
    expect(world.dataStores.calls).toEqual([]);
    expect(world.client.peek(resources.deployment, 'team', NAME)).toBeDefined(); // the garbage collector's job
    const kept = world.client.peek<SecretObject>(resources.secret, 'team', `${NAME}-admin`)!;
    expect(kept.data).toEqual(before.data);
    expect(kept.metadata.ownerReferences).toEqual([]); // not collected with the resource
    expect(world.events.recorded.at(-1)).toMatchObject({
      reason: 'DataRetained',
      message: 'Kept the database schema, the stored objects and the generated Secrets (deletionPolicy Retain)',
    });
    expect(gone()).toBe(true);
  });

  it('does nothing without its finalizer', async () => {
    const world = fakeWorld();
    const resource = world.client.seed(boxes({}, { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['example.com/other'] }));
    expect(await finalize(world, resource)).toBe(false);
    expect(world.client.writes()).toEqual([]);
  });

  it('deletionPolicy Delete stops the Deployment first, then drops what it created and lets the resource go', async () => {
    const { world, resource, gone, writesBefore } = await deleting({ deletionPolicy: 'Delete' }, CREATED);
    await finalize(world, resource);
    expect(world.client.writes().slice(writesBefore)).toEqual([`delete deployments ${NAME}`, 'patch boxrepositories boxes']);
    expect(world.dataStores.calls).toEqual(['dropSchema box_repository', 'deleteObjects boxes/team', 'deleteBucket boxes']);
    expect(world.events.recorded.at(-1)).toMatchObject({
      reason: 'DataDeleted',
      message: 'Dropped the schema "box_repository"; deleted 3 objects under "team/" in bucket "boxes" and the bucket (deletionPolicy Delete)',
    });
    expect(gone()).toBe(true);
  });

  it('deletionPolicy Delete keeps a schema and a bucket that existed before the resource', async () => {
    const { world, resource } = await deleting({ deletionPolicy: 'Delete' });
    await finalize(world, resource);
    expect(world.dataStores.calls).toEqual(['deleteObjects boxes/team']);
    expect(world.events.recorded.at(-1)?.message).toContain('Kept the schema "box_repository" in postgres.team:5432/boxyard: it existed before this resource');
  });

  it('refuses deletionPolicy Delete of a schema another resource uses, and deletes nothing', async () => {
    const { world, resource, gone, writesBefore } = await deleting({ deletionPolicy: 'Delete' }, CREATED);
    world.peerList.push({ ...boxes(), metadata: { name: 'other', namespace: 'team', uid: 'uid-other' } });
    await expect(finalize(world, resource)).rejects.toMatchObject({
      reason: 'DeletionRefused',
      message: expect.stringMatching(
        /^deletionPolicy Delete refused: BoxRepository team\/other uses the same schema "box_repository" in the same database\. Nothing was deleted/,
      ),
    });
    expect(world.client.writes()).toHaveLength(writesBefore);
    expect(world.dataStores.calls).toEqual([]);
    expect(gone()).toBe(false);
  });

  it('with the database Secret gone, says how to finish the deletion', async () => {
    const { world, resource } = await deleting({ deletionPolicy: 'Delete' });
    await world.client.delete(resources.secret, 'team', 'db');
    await expect(finalize(world, resource)).rejects.toMatchObject({
      reason: 'SecretNotFound',
      message:
        'Secret "db" (spec.database.secretRef) does not exist in namespace "team": create it with the key "url"; or set spec.deletionPolicy: Retain to finish the deletion and keep the data',
    });
  });
});
