import { describe, expect, it } from 'vitest';
import type { ServiceResource } from '../../crds/types.ts';
import { secretSources } from '../../desired/common.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { checkDataStores, requireReferencedSecrets, type PassedChecks } from './dependency-checks.ts';
import { DATABASE_URL, boxes, fakeWorld, secret, shells, terminalPool } from './fake-fixtures.ts';

const s3 = () => secret('s3', { accessKey: 'AKIA1', secretKey: 'shh' });

function setUp(resource = boxes(), options: Parameters<typeof fakeWorld>[1] = {}) {
  const world = fakeWorld(resource.kind === 'TerminalPool' ? terminalPool : undefined, options);
  const stored = world.client.seed(resource);
  return { world, resource: stored, sources: secretSources(world.kind, stored) };
}

describe('dependency checks (fake client)', () => {
  it('a missing database Secret fails with SecretNotFound, naming the field and the key to create', async () => {
    const { world, resource, sources } = setUp();
    world.client.seed(s3());
    await expect(requireReferencedSecrets(world, resource, sources)).rejects.toMatchObject({
      reason: 'SecretNotFound',
      message: 'Secret "db" (spec.database.secretRef) does not exist in namespace "team": create it with the key "url"',
    });
    expect(world.client.writes()).toEqual([]);
  });

  it('asks for a referenced session Secret, never for the ones the operator generates', async () => {
    const { world, resource, sources } = setUp(
      boxes({ auth: { sessionTTLSeconds: 3600, adminUsername: 'admin', sessionSecretRef: { name: 'jwt', key: 'key' } } }),
    );
    world.client.seed(secret('db', { url: DATABASE_URL }));
    world.client.seed(s3());
    await expect(requireReferencedSecrets(world, resource, sources)).rejects.toMatchObject({
      reason: 'SecretNotFound',
      message: expect.stringContaining('"jwt" (spec.auth.sessionSecretRef)'),
    });
    world.client.seed(secret('jwt', { key: 'k' }));
    await expect(requireReferencedSecrets(world, resource, sources)).resolves.toBeUndefined();
  });

  it('a database Secret without the key fails with SecretKeyMissing and lists the keys it has', async () => {
    const { world, resource, sources } = setUp();
    world.client.seed(secret('db', { uri: DATABASE_URL, password: 'x' }));
    world.client.seed(s3());
    await expect(checkDataStores(world, 'team/boxes', resource, sources, new Map())).rejects.toMatchObject({
      reason: 'SecretKeyMissing',
      message:
        'Secret "db" (spec.database.secretRef) has no key "url" (it has: uri, password): add the key, or name another one in spec.database.secretRef.key',
    });
    expect(world.dataStores.calls).toEqual([]);
  });

  it('records a schema and a bucket it created in the status at once, with an event each', async () => {
    const { world, resource, sources } = setUp(boxes(), { created: { schema: true, bucket: true } });
    world.client.seed(secret('db', { url: DATABASE_URL }));
    world.client.seed(s3());
    await checkDataStores(world, 'team/boxes', resource, sources, new Map());
    expect(world.dataStores.calls).toEqual(['checkDatabase box_repository', 'checkBucket boxes']);
    const status = world.client.peek<ServiceResource>(resources.boxRepository, 'team', 'boxes')?.status;
    expect(status?.database?.createdSchemas).toEqual([{ database: 'postgres.team:5432/boxyard', schema: 'box_repository' }]);
    expect(status?.storage?.createdBuckets).toEqual([
      { endpoint: 'minio.storage:9000', bucket: 'boxes', accessKeyDigest: expect.stringMatching(/^[0-9a-f]{16}$/) },
    ]);
    expect(world.events.recorded.map((e) => `${e.reason}: ${e.message}`)).toEqual([
      'SchemaCreated: Created the schema "box_repository" in postgres.team:5432/boxyard',
      'BucketCreated: Created bucket "boxes" at http://minio.storage.svc:9000',
    ]);
  });

  it('records nothing for a schema and bucket that already existed', async () => {
    const { world, resource, sources } = setUp();
    world.client.seed(secret('db', { url: DATABASE_URL }));
    world.client.seed(s3());
    await checkDataStores(world, 'team/boxes', resource, sources, new Map());
    expect(world.client.writes()).toEqual([]);
    expect(world.events.recorded).toEqual([]);
  });

  it('skips the checks while nothing they depend on changed; runs them again when the Secret changes', async () => {
    const { world, resource, sources } = setUp();
    const db = world.client.seed(secret('db', { url: DATABASE_URL }));
    world.client.seed(s3());
    const passed: PassedChecks = new Map();
    await checkDataStores(world, 'team/boxes', resource, sources, passed);
    await checkDataStores(world, 'team/boxes', resource, sources, passed);
    expect(world.dataStores.calls).toHaveLength(2); // database and bucket, once
    world.client.seed({ ...db, data: { url: Buffer.from(`${DATABASE_URL}2`).toString('base64') } });
    await checkDataStores(world, 'team/boxes', resource, sources, passed);
    expect(world.dataStores.calls).toHaveLength(4);
    const moved = { ...resource, spec: { ...resource.spec, database: { ...resource.spec.database, schema: 'other' } } };
    await checkDataStores(world, 'team/boxes', moved, secretSources(world.kind, moved), passed);
    expect(world.dataStores.calls.at(-2)).toBe('checkDatabase other');
  });

  it('checks no bucket for a kind without storage', async () => {
    const { world, resource, sources } = setUp(shells());
    world.client.seed(secret('db', { url: DATABASE_URL }));
    await checkDataStores(world, 'team/shells', resource, sources, new Map());
    expect(world.dataStores.calls).toEqual(['checkDatabase terminal']);
  });
});
