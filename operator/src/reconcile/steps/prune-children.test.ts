import { describe, expect, it } from 'vitest';
import type { ServiceResource } from '../../crds/types.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { applyChildren } from './apply-children.ts';
import { boxes, desiredFor, fakeWorld, type FakeWorld } from './fake-fixtures.ts';
import { pruneChildren } from './prune-children.ts';

const NAME = 'boxes-box-repository';
const withIngress = () => boxes({ ingress: { host: 'boxes.example.com', path: '/' } });

/** The resource after a first reconcile with an Ingress, and the same resource with the Ingress removed. */
async function setUp(options: Parameters<typeof fakeWorld>[1] = {}) {
  const world = fakeWorld(undefined, options);
  const before = world.client.seed(withIngress());
  await applyChildren(world, before, desiredFor(world, before, !!options.serviceMonitors));
  const after: ServiceResource = { ...before, spec: { ...before.spec, ingress: undefined } };
  return { world, before, after };
}

const ingressOf = (world: FakeWorld, name = NAME) => world.client.peek(resources.ingress, 'team', name);

describe('prune children (fake client)', () => {
  it('deletes the Ingress once the spec no longer asks for one, and only it', async () => {
    const { world, after } = await setUp();
    expect(ingressOf(world)).toBeDefined();
    const writes = world.client.writes().length;
    await pruneChildren(world, after, desiredFor(world, after));
    expect(world.client.writes().slice(writes)).toEqual([`delete ingresses ${NAME}`]);
    expect(ingressOf(world)).toBeUndefined();
    expect(world.client.peek(resources.deployment, 'team', NAME)).toBeDefined();
    expect(world.events.recorded.at(-1)?.message).toBe(`Deleted Ingress ${NAME} (no longer in the spec)`);
  });

  it('deletes nothing while every owned child is still desired', async () => {
    const { world, before } = await setUp();
    const writes = world.client.writes().length;
    await pruneChildren(world, before, desiredFor(world, before));
    expect(world.client.writes()).toHaveLength(writes);
  });

  it("leaves alone what it does not control: another resource's child, an object without an owner", async () => {
    const { world, after } = await setUp();
    const labels = { 'app.kubernetes.io/managed-by': 'boxyard-operator' };
    const other = { apiVersion: 'boxyard.io/v1alpha1', kind: 'FileShare', name: 'files', uid: 'uid-files', controller: true };
    world.client.seed({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'files-file-share', namespace: 'team', labels, ownerReferences: [other] },
    });
    world.client.seed({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: NAME, namespace: 'team', labels } });
    await pruneChildren(world, after, desiredFor(world, after));
    expect(ingressOf(world, 'files-file-share')).toBeDefined();
    expect(world.client.peek(resources.podDisruptionBudget, 'team', NAME)).toBeDefined();
  });

  it('deletes its ServiceMonitor once monitoring is turned off, not one another resource controls', async () => {
    const { world, before } = await setUp({ serviceMonitors: true });
    const monitoring = { serviceMonitor: { enabled: true, interval: '30s' }, tracing: { enabled: true } };
    const on: ServiceResource = { ...before, spec: { ...before.spec, monitoring } };
    await applyChildren(world, on, desiredFor(world, on, true));
    expect(world.client.peek(resources.serviceMonitor, 'team', NAME)).toBeDefined();
    await pruneChildren(world, before, desiredFor(world, before, true));
    expect(world.client.peek(resources.serviceMonitor, 'team', NAME)).toBeUndefined();

    const foreign: KubeObject = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: NAME, namespace: 'team', ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'uid-x', controller: true }] },
    };
    world.client.seed(foreign);
    await pruneChildren(world, before, desiredFor(world, before, true));
    expect(world.client.peek(resources.serviceMonitor, 'team', NAME)).toBeDefined();
  });
});
