// Who controls a child: the owner reference with `controller: true`. A child of an earlier resource of the same
// kind and name (deleted, then re-created) is taken over rather than reported as a conflict.
import type { ServiceResource } from '../../crds/types.ts';
import type { KubeObject, OwnerReference } from '@boxyard/kit/kube/types.ts';

/** The uid of the controlling owner, as a one-element list (the OWNER_INDEX indexer); empty when there is none. */
export const controllerUid = (object: KubeObject): string[] => {
  const owner = object.metadata.ownerReferences?.find((ref) => ref.controller);
  return owner ? [owner.uid] : [];
};

/**
 * An earlier resource of the same kind and name owned it: that owner is gone (names are unique), and the garbage
 * collector has not removed the child yet. Taking it over is what a re-created resource needs.
 */
export function isPredecessor(resource: ServiceResource, owner: Pick<OwnerReference, 'kind' | 'name' | 'uid'> | undefined): boolean {
  return !!owner && owner.kind === resource.kind && owner.name === resource.metadata.name && owner.uid !== resource.metadata.uid;
}
