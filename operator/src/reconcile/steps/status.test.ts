import { describe, expect, it } from 'vitest';
import { CheckFailure } from '../../checks/check-failure.ts';
import type { ServiceResource } from '../../crds/types.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { deploymentPhase, type DeploymentObject } from '../conditions.ts';
import { boxes, desiredFor, fakeWorld } from './fake-fixtures.ts';
import { PAUSED, stalledPhase, statusFields, writeStatus } from './status.ts';

const rolledOut = (ready: number): DeploymentObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'boxes-box-repository', namespace: 'team', generation: 2 },
  spec: { replicas: 2 },
  status: {
    observedGeneration: 2,
    replicas: 2,
    updatedReplicas: 2,
    readyReplicas: ready,
    availableReplicas: ready,
    conditions: [{ type: 'Available', status: ready === 2 ? 'True' : 'False' }],
  },
});

function setUp() {
  const world = fakeWorld();
  const resource = world.client.seed(boxes({ replicas: 2 }, { generation: 4 }));
  const stored = () => world.client.peek<ServiceResource>(resources.boxRepository, 'team', 'boxes')!;
  return { world, resource, stored };
}

const condition = (r: ServiceResource, type: string) => r.status?.conditions?.find((c) => c.type === type);

describe('status (fake client)', () => {
  it('carries observedGeneration, the ready replicas and Ready=True once the Deployment is available; one Ready event', async () => {
    const { world, resource, stored } = setUp();
    const desired = desiredFor(world, resource);
    await writeStatus(world, resource, deploymentPhase(rolledOut(2)), statusFields(desired, rolledOut(2)));
    const status = stored().status!;
    expect(status).toMatchObject({
      observedGeneration: 4,
      replicas: 2,
      readyReplicas: 2,
      updatedReplicas: 2,
      url: 'http://boxes-box-repository.team.svc',
      image: 'ghcr.io/boxyard/boxyard:0.1.0',
    });
    expect(status).toMatchObject({ sessionSecretName: 'boxes-box-repository-session', adminSecretName: 'boxes-box-repository-admin' });
    expect(condition(stored(), 'Ready')).toMatchObject({ status: 'True', reason: 'Available', observedGeneration: 4 });
    expect(world.events.recorded.map((e) => `${e.reason}: ${e.message}`)).toEqual(['Ready: BoxRepository is ready at http://boxes-box-repository.team.svc']);
  });

  it('writes nothing when the status would not change (the steady state)', async () => {
    const { world, resource, stored } = setUp();
    const desired = desiredFor(world, resource);
    await writeStatus(world, resource, deploymentPhase(rolledOut(2)), statusFields(desired, rolledOut(2)));
    const writes = world.client.writes().length;
    await writeStatus(world, stored(), deploymentPhase(rolledOut(2)), statusFields(desired, rolledOut(2)));
    expect(world.client.writes()).toHaveLength(writes);
    expect(world.events.reasons()).toEqual(['Ready']);
  });

  it('reports Reconciling while pods are not ready, with how many are', async () => {
    const { world, resource, stored } = setUp();
    await writeStatus(world, resource, deploymentPhase(rolledOut(1)), statusFields(desiredFor(world, resource), rolledOut(1)));
    expect(stored().status?.readyReplicas).toBe(1);
    expect(condition(stored(), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Progressing',
      message: 'Deployment boxes-box-repository: 1 of 2 pods available',
    });
    expect(condition(stored(), 'Reconciling')?.status).toBe('True');
    expect(world.events.recorded).toEqual([]);
  });

  it("reports Stalled with the failure's reason and a Warning event, once per message", async () => {
    const { world, resource, stored } = setUp();
    const phase = stalledPhase(resource, new CheckFailure('SecretNotFound', 'Secret "db" is missing'));
    await writeStatus(world, resource, phase, {});
    expect(condition(stored(), 'Stalled')).toMatchObject({ status: 'True', reason: 'SecretNotFound', message: 'Secret "db" is missing' });
    expect(stored().status?.observedGeneration).toBe(4);
    await writeStatus(world, stored(), phase, {});
    expect(world.events.recorded).toEqual([expect.objectContaining({ type: 'Warning', reason: 'SecretNotFound', message: 'Secret "db" is missing' })]);
  });

  it('says a failure during deletion blocks the deletion', () => {
    const deleting = boxes({}, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    expect(stalledPhase(deleting, new CheckFailure('DeletionRefused', 'shared')).message).toBe('Deletion blocked: shared');
  });

  it('paused: keeps the observedGeneration it had, Ready as it was', async () => {
    const { world, resource, stored } = setUp();
    await writeStatus(world, resource, deploymentPhase(rolledOut(2)), statusFields(desiredFor(world, resource), rolledOut(2)));
    const edited = { ...stored(), metadata: { ...stored().metadata, generation: 5 } };
    await writeStatus(world, edited, PAUSED, {});
    expect(stored().status?.observedGeneration).toBe(4);
    expect(condition(stored(), 'Ready')?.status).toBe('True');
    expect(condition(stored(), 'Reconciling')).toMatchObject({ status: 'False', reason: 'Paused' });
  });

  it('ignores a resource deleted meanwhile (404)', async () => {
    const { world, resource } = setUp();
    await world.client.delete(resources.boxRepository, 'team', 'boxes');
    await expect(writeStatus(world, resource, PAUSED, {})).resolves.toBeUndefined();
  });
});
