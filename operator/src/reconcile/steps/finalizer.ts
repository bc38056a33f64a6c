// The operator's finalizer: added before anything is created, so a deletion always passes through finalize.ts;
// removed by finalize.ts once the data was deleted or retained. Both writes carry the resourceVersion.
import type { ServiceResource } from '../../crds/types.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import type { ReconcileClient } from './step-inputs.ts';

export const FINALIZER = 'boxyard.io/cleanup';

/** Adds the finalizer when missing; `resource` takes the patched metadata (its new resourceVersion). */
export async function addFinalizer(client: ReconcileClient, kind: KindInfo, resource: ServiceResource): Promise<void> {
  const finalizers = resource.metadata.finalizers ?? [];
  if (finalizers.includes(FINALIZER)) return;
  // Merge patch with the resourceVersion: fails (409) rather than resurrect or clobber a changed object.
  const patched = await client.mergePatch<ServiceResource>(kind.resource, resource.metadata.namespace, resource.metadata.name, {
    metadata: { finalizers: [...finalizers, FINALIZER], resourceVersion: resource.metadata.resourceVersion },
  });
  resource.metadata = patched.metadata;
}

/** Removes the finalizer: the apiserver then deletes the resource, and the garbage collector its children. */
export async function removeFinalizer(client: ReconcileClient, kind: KindInfo, resource: ServiceResource): Promise<void> {
  const finalizers = resource.metadata.finalizers ?? [];
  await client.mergePatch(kind.resource, resource.metadata.namespace, resource.metadata.name, {
    metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: resource.metadata.resourceVersion },
  });
}
