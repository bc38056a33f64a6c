// Applies the desired children with server-side apply (field manager boxyard-operator), in the order the desired
// state lists them, and only those missing or differing from what was last applied: the steady state writes
// nothing. A child of the same name that another owner controls is a ChildConflict, never overwritten.
import { CheckFailure } from '../../checks/check-failure.ts';
import type { ServiceResource } from '../../crds/types.ts';
import type { DesiredState } from '../../desired/index.ts';
import { KubeApiError } from '@boxyard/kit/kube/client.ts';
import { resources, resourceTypeOf, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import type { DeploymentObject } from '../conditions.ts';
import { needsApply, withAppliedHash } from '../drift.ts';
import { isPredecessor } from './ownership.ts';
import type { EventSink, ObjectCache, ReconcileClient } from './step-inputs.ts';

export interface ApplyChildrenInput {
  client: ReconcileClient;
  /** Caches of the owned child types, by plural; a type without one is read from the API. */
  children: ReadonlyMap<string, ObjectCache>;
  events: EventSink;
}

async function liveChild(input: ApplyChildrenInput, type: ResourceType, namespace: string, name: string): Promise<KubeObject | undefined> {
  const cache = input.children.get(type.plural);
  return cache ? cache.get(namespace, name) : await input.client.get(type, namespace, name);
}

/** Applies every child that is missing or differs; returns the Deployment as it now stands. */
export async function applyChildren(input: ApplyChildrenInput, resource: ServiceResource, desired: DesiredState): Promise<DeploymentObject | undefined> {
  const ns = resource.metadata.namespace!;
  const uid = resource.metadata.uid!;
  let deployment: DeploymentObject | undefined;
  // One event per kind of change, not one per child: a thousand resources must not mean ten thousand events.
  const created: string[] = [];
  const updated: string[] = [];
  for (const object of desired.objects) {
    const type = resourceTypeOf(object);
    const live = await liveChild(input, type, ns, object.metadata.name);
    const owner = live?.metadata.ownerReferences?.find((ref) => ref.controller);
    if (live && owner?.uid !== uid && !isPredecessor(resource, owner)) {
      throw new CheckFailure(
        'ChildConflict',
        owner
          ? `${type.kind} "${object.metadata.name}" belongs to ${owner.kind} "${owner.name}" (uid ${owner.uid}); it is deleted with its owner, then this resource takes the name`
          : `${type.kind} "${object.metadata.name}" exists and is not managed by the operator: delete or rename it`,
      );
    }
    const wanted = withAppliedHash(object);
    let current = live;
    if (needsApply(wanted, live)) {
      current = await applyOne(input.client, type, wanted);
      (live ? updated : created).push(`${type.kind} ${object.metadata.name}`);
    }
    if (type === resources.deployment) deployment = current as DeploymentObject;
  }
  if (created.length) await input.events.record(resource, 'Normal', 'Created', `Created ${created.join(', ')}`);
  if (updated.length) await input.events.record(resource, 'Normal', 'Updated', `Updated ${updated.join(', ')}`);
  return deployment;
}

/** One server-side apply; a refusal the spec or the RBAC can fix becomes InvalidSpec or Forbidden. */
async function applyOne(client: ReconcileClient, type: ResourceType, wanted: KubeObject): Promise<KubeObject> {
  try {
    return await client.apply(wanted);
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 400 || error.status === 422)) {
      throw new CheckFailure(
        'InvalidSpec',
        `the apiserver refused ${type.kind} "${wanted.metadata.name}": ${error.body?.message ?? error.message}. Fix the spec`,
      );
    }
    if (error instanceof KubeApiError && error.status === 403) {
      throw new CheckFailure(
        'Forbidden',
        `the operator may not write ${type.kind} "${wanted.metadata.name}": ${error.body?.message ?? error.message}. Check the operator's RBAC (charts/boxyard)`,
      );
    }
    throw error;
  }
}
