import { describe, expect, it } from 'vitest';
import type { ServiceResource } from '../../crds/types.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { boxes, fakeWorld } from './fake-fixtures.ts';
import { FINALIZER, addFinalizer, removeFinalizer } from './finalizer.ts';

describe('finalizer (fake client)', () => {
  it('adds boxyard.io/cleanup once, keeping finalizers others set', async () => {
    const { client, kind } = fakeWorld();
    const resource = client.seed(boxes({}, { finalizers: ['example.com/other'] }));
    await addFinalizer(client, kind, resource);
    expect(resource.metadata.finalizers).toEqual(['example.com/other', FINALIZER]);
    expect(client.peek(resources.boxRepository, 'team', 'boxes')?.metadata.finalizers).toEqual(['example.com/other', FINALIZER]);
    await addFinalizer(client, kind, resource);
    expect(client.writes()).toEqual(['patch boxrepositories boxes']);
  });

  it('never writes over a resource changed since it was read (409, the next reconcile sees the change)', async () => {
    const { client, kind } = fakeWorld();
    const stale = client.seed(boxes());
    client.seed({ ...stale, spec: { ...stale.spec, replicas: 3 } }); // someone else's edit: a new resourceVersion
    await expect(addFinalizer(client, kind, stale)).rejects.toMatchObject({ status: 409 });
    expect(client.peek<ServiceResource>(resources.boxRepository, 'team', 'boxes')?.metadata.finalizers).toBeUndefined();
  });

  it('removing it lets the apiserver finish a pending deletion', async () => {
    const { client, kind } = fakeWorld();
    const resource = client.seed(boxes({}, { finalizers: [FINALIZER] }));
    await client.delete(resources.boxRepository, 'team', 'boxes');
    const deleting = client.peek<ServiceResource>(resources.boxRepository, 'team', 'boxes')!;
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    await removeFinalizer(client, kind, deleting);
    expect(client.peek(resources.boxRepository, 'team', 'boxes')).toBeUndefined();
    expect(resource.metadata.uid).toBe(deleting.metadata.uid);
  });
});
