// The orchestrator on the fake client: the steps in order, level-triggered (a second pass over an unchanged world
// writes nothing), and every CheckFailure reported as Stalled. The real-apiserver suites are in operator/test.
import { describe, expect, it } from 'vitest';
import type { ServiceResource } from '../crds/types.ts';
import { KubeApiError } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { Informer } from '../runtime/informer.ts';
import { ImagePolicy } from './image-policy.ts';
import { FINALIZER, ServiceReconciler } from './service-reconciler.ts';
import { DATABASE_URL, boxes, fakeWorld, secret } from './steps/fake-fixtures.ts';

const DEFAULT_IMAGE = 'ghcr.io/boxyard/boxyard:0.1.0';
const NAME = 'boxes-box-repository';

function setUp(resource: ServiceResource = boxes(), withSecrets = true) {
  const world = fakeWorld();
  if (withSecrets) {
    world.client.seed(secret('db', { url: DATABASE_URL }));
    world.client.seed(secret('s3', { accessKey: 'AKIA1', secretKey: 'shh' }));
  }
  world.client.seed(resource);
  const reconciler = new ServiceReconciler({
    ...world,
    primary: world.client.cache(resources.boxRepository) as Pick<Informer<ServiceResource>, 'get'>,
    defaultImage: DEFAULT_IMAGE,
    imagePolicy: new ImagePolicy(['ghcr.io/boxyard/boxyard'], [DEFAULT_IMAGE]),
    log: () => {},
  });
  const stored = () => world.client.peek<ServiceResource>(resources.boxRepository, 'team', 'boxes');
  const condition = (type: string) => stored()?.status?.conditions?.find((c) => c.type === type);
  return { world, reconciler, stored, condition };
}

describe('service reconciler (fake client)', () => {
  it('runs the steps in order: finalizer, generated Secrets, children, status', async () => {
    const { world, reconciler, stored, condition } = setUp();
    expect(await reconciler.reconcile('team/boxes')).toEqual({});
    expect(world.client.writes()).toEqual([
      'patch boxrepositories boxes',
      `create secrets ${NAME}-session`,
      `create secrets ${NAME}-admin`,
      `apply configmaps ${NAME}-config`,
      `apply services ${NAME}`,
      `apply deployments ${NAME}`,
      `apply networkpolicies ${NAME}`,
      'patch boxrepositories/status boxes',
    ]);
    expect(world.dataStores.calls).toEqual(['checkDatabase box_repository', 'checkBucket boxes']);
    expect(stored()?.metadata.finalizers).toEqual([FINALIZER]);
    expect(stored()?.status?.observedGeneration).toBe(1);
    expect(condition('Reconciling')).toMatchObject({ status: 'True', reason: 'Progressing' });
  });

  it('is level-triggered: a second pass over an unchanged world writes nothing and checks nothing again', async () => {
    const { world, reconciler } = setUp();
    await reconciler.reconcile('team/boxes');
    const [writes, checks] = [world.client.writes().length, world.dataStores.calls.length];
    await reconciler.reconcile('team/boxes');
    expect(world.client.writes()).toHaveLength(writes);
    expect(world.dataStores.calls).toHaveLength(checks);
  });

  it('reports Ready once the Deployment is available, writing only the status', async () => {
    const { world, reconciler, stored, condition } = setUp();
    await reconciler.reconcile('team/boxes');
    const deployment = world.client.peek(resources.deployment, 'team', NAME)!;
    world.client.seed({
      ...deployment,
      status: {
        observedGeneration: 1,
        replicas: 1,
        updatedReplicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        conditions: [{ type: 'Available', status: 'True' }],
      },
    });
    const writes = world.client.writes().length;
    await reconciler.reconcile('team/boxes');
    expect(world.client.writes().slice(writes)).toEqual(['patch boxrepositories/status boxes']);
    expect(condition('Ready')).toMatchObject({ status: 'True', reason: 'Available' });
    expect(stored()?.status?.readyReplicas).toBe(1);
    expect(world.events.reasons()).toContain('Ready');
  });

  it('a refused image: Stalled ImageNotAllowed, and nothing else written (not even the finalizer)', async () => {
    const { world, reconciler, stored, condition } = setUp(boxes({ image: 'docker.io/evil/boxyard:1' }));
    expect(await reconciler.reconcile('team/boxes')).toEqual({ stalled: true });
    expect(world.client.writes()).toEqual(['patch boxrepositories/status boxes']);
    expect(stored()?.metadata.finalizers).toBeUndefined();
    expect(condition('Stalled')).toMatchObject({ status: 'True', reason: 'ImageNotAllowed' });
  });

  it('a missing database Secret: Stalled SecretNotFound with the message to act on, no children', async () => {
    const { world, reconciler, condition } = setUp(boxes(), false);
    expect(await reconciler.reconcile('team/boxes')).toEqual({ stalled: true });
    expect(condition('Stalled')).toMatchObject({
      status: 'True',
      reason: 'SecretNotFound',
      message: 'Secret "db" (spec.database.secretRef) does not exist in namespace "team": create it with the key "url"',
    });
    expect(condition('Ready')).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
    expect(world.client.all(resources.deployment)).toEqual([]);
    expect(world.events.recorded).toEqual([expect.objectContaining({ type: 'Warning', reason: 'SecretNotFound' })]);
  });

  it('finalizes a resource under deletion (Retain) and lets it go', async () => {
    const { world, reconciler, stored } = setUp();
    await reconciler.reconcile('team/boxes');
    await world.client.delete(resources.boxRepository, 'team', 'boxes');
    expect(await reconciler.reconcile('team/boxes')).toEqual({});
    expect(stored()).toBeUndefined();
    expect(world.events.reasons()).toContain('DataRetained');
  });

  it('leaves a key that is no longer cached alone, and lets other errors reach the controller (retried)', async () => {
    const { world, reconciler } = setUp();
    expect(await reconciler.reconcile('team/gone')).toEqual({});
    expect(world.client.calls).toEqual([]);
    world.client.failNext('apply', 'deployments', new KubeApiError(500, { kind: 'Status', message: 'etcd timeout' }, 'PATCH'));
    await expect(reconciler.reconcile('team/boxes')).rejects.toBeInstanceOf(KubeApiError);
  });
});
