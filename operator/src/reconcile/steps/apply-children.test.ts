import { describe, expect, it } from 'vitest';
import type { ServiceResource } from '../../crds/types.ts';
import { KubeApiError } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { APPLIED_HASH_ANNOTATION } from '../drift.ts';
import { applyChildren } from './apply-children.ts';
import { boxes, desiredFor, fakeWorld } from './fake-fixtures.ts';

const DEPLOYMENT = 'boxes-box-repository';

function setUp(resource: ServiceResource = boxes()) {
  const world = fakeWorld();
  const stored = world.client.seed(resource);
  return { world, resource: stored, desired: desiredFor(world, stored) };
}

describe('apply children (fake client)', () => {
  it('applies every desired child in order, owned by the resource, with one Created event', async () => {
    const { world, resource, desired } = setUp();
    const deployment = await applyChildren(world, resource, desired);
    expect(world.client.writes()).toEqual([
      'apply configmaps boxes-box-repository-config',
      'apply services boxes-box-repository',
      'apply deployments boxes-box-repository',
      'apply networkpolicies boxes-box-repository',
    ]);
    expect(deployment?.metadata.name).toBe(DEPLOYMENT);
    const live = world.client.peek(resources.deployment, 'team', DEPLOYMENT)!;
    expect(live.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: resource.metadata.uid, controller: true })]);
    expect(live.metadata.annotations?.[APPLIED_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{32}$/);
    expect(world.events.recorded.map((e) => e.message)).toEqual([
      `Created ConfigMap boxes-box-repository-config, Service ${DEPLOYMENT}, Deployment ${DEPLOYMENT}, NetworkPolicy ${DEPLOYMENT}`,
    ]);
  });

  it('writes nothing when every child is as desired (the steady state)', async () => {
    const { world, resource, desired } = setUp();
    await applyChildren(world, resource, desired);
    const writes = world.client.writes().length;
    const deployment = await applyChildren(world, resource, desired);
    expect(world.client.writes()).toHaveLength(writes);
    expect(deployment?.metadata.name).toBe(DEPLOYMENT);
  });

  it('re-applies a child someone edited, and says Updated', async () => {
    const { world, resource, desired } = setUp();
    await applyChildren(world, resource, desired);
    const live = world.client.peek(resources.deployment, 'team', DEPLOYMENT)!;
    world.client.seed({ ...live, spec: { ...(live.spec as object), replicas: 5 } }); // kubectl scale
    await applyChildren(world, resource, desired);
    expect(world.client.writes().at(-1)).toBe(`apply deployments ${DEPLOYMENT}`);
    expect((world.client.peek(resources.deployment, 'team', DEPLOYMENT)!.spec as { replicas: number }).replicas).toBe(1);
    expect(world.events.recorded.at(-1)?.message).toBe(`Updated Deployment ${DEPLOYMENT}`);
  });

  it('refuses a child of the same name another resource controls, and applies nothing', async () => {
    const { world, resource, desired } = setUp();
    const other = { apiVersion: 'boxyard.io/v1alpha1', kind: 'FileShare', name: 'other', uid: 'uid-other', controller: true };
    world.client.seed({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'boxes-box-repository-config',
        namespace: 'team',
        labels: { 'app.kubernetes.io/managed-by': 'boxyard-operator' },
        ownerReferences: [other],
      },
    });
    await expect(applyChildren(world, resource, desired)).rejects.toMatchObject({
      reason: 'ChildConflict',
      message:
        'ConfigMap "boxes-box-repository-config" belongs to FileShare "other" (uid uid-other); it is deleted with its owner, then this resource takes the name',
    });
    expect(world.client.writes()).toEqual([]);
  });

  it('takes over the children of a deleted predecessor of the same name', async () => {
    const { world, resource, desired } = setUp();
    const old = { apiVersion: 'boxyard.io/v1alpha1', kind: 'BoxRepository', name: 'boxes', uid: 'uid-old', controller: true };
    world.client.seed({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'boxes-box-repository-config',
        namespace: 'team',
        labels: { 'app.kubernetes.io/managed-by': 'boxyard-operator' },
        ownerReferences: [old],
      },
    });
    await applyChildren(world, resource, desired);
    expect(world.client.peek(resources.configMap, 'team', 'boxes-box-repository-config')!.metadata.ownerReferences?.map((r) => r.uid)).toEqual([
      resource.metadata.uid,
    ]);
  });

  it('turns an apiserver refusal into InvalidSpec (400/422) or Forbidden (403) with its message', async () => {
    const { world, resource, desired } = setUp();
    const refusal = (status: number, message: string) => new KubeApiError(status, { kind: 'Status', message }, 'PATCH');
    world.client.failNext('apply', 'services', refusal(422, 'spec.ports[0].port: Invalid value'));
    await expect(applyChildren(world, resource, desired)).rejects.toMatchObject({
      reason: 'InvalidSpec',
      message: `the apiserver refused Service "${DEPLOYMENT}": spec.ports[0].port: Invalid value. Fix the spec`,
    });
    world.client.failNext('apply', 'deployments', refusal(403, 'deployments.apps is forbidden'));
    await expect(applyChildren(world, resource, desired)).rejects.toMatchObject({
      reason: 'Forbidden',
      message: `the operator may not write Deployment "${DEPLOYMENT}": deployments.apps is forbidden. Check the operator's RBAC (charts/boxyard)`,
    });
    world.client.failNext('apply', 'deployments', refusal(500, 'etcd timeout'));
    await expect(applyChildren(world, resource, desired)).rejects.toBeInstanceOf(KubeApiError); // retried, not Stalled
  });
});
