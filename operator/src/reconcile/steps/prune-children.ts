// Deletes the children a resource owns that its spec no longer asks for (Ingress removed, PDB when scaled to one,
// ServiceMonitor turned off, ...): only children this resource controls, each deleted with a uid precondition so
// a newer object of the same name is never hit.
import type { ServiceResource } from '../../crds/types.ts';
import { childName } from '../../desired/common.ts';
import { ownedTypes, type DesiredState } from '../../desired/index.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { controllerUid } from './ownership.ts';
import { OWNER_INDEX, type EventSink, type ObjectCache, type ReconcileClient } from './step-inputs.ts';

export interface PruneChildrenInput {
  client: ReconcileClient;
  kind: KindInfo;
  /** Caches of the owned child types, by plural, indexed by OWNER_INDEX. */
  children: ReadonlyMap<string, ObjectCache>;
  events: EventSink;
  serviceMonitorAvailable: () => Promise<boolean>;
}

/** Deletes children that are no longer desired. */
export async function pruneChildren(input: PruneChildrenInput, resource: ServiceResource, desired: DesiredState): Promise<void> {
  const { client } = input;
  const ns = resource.metadata.namespace!;
  const uid = resource.metadata.uid!;
  const keep = new Set(desired.objects.map((o) => `${o.kind}/${o.metadata.name}`));
  for (const type of ownedTypes(input.kind)) {
    const cache = input.children.get(type.plural);
    for (const child of cache?.byIndex(OWNER_INDEX, uid) ?? []) {
      if (keep.has(`${type.kind}/${child.metadata.name}`)) continue;
      if (await client.delete(type, ns, child.metadata.name, { uid: child.metadata.uid })) {
        await input.events.record(resource, 'Normal', 'Deleted', `Deleted ${type.kind} ${child.metadata.name} (no longer in the spec)`);
      }
    }
  }
  // ServiceMonitors are not cached (their CRD may not exist): looked up by name.
  const monitorName = childName(input.kind, resource.metadata.name);
  if (!keep.has(`ServiceMonitor/${monitorName}`) && (await input.serviceMonitorAvailable())) {
    const live = await client.get(resources.serviceMonitor, ns, monitorName);
    if (live && controllerUid(live)[0] === uid) await client.delete(resources.serviceMonitor, ns, monitorName, { uid: live.metadata.uid });
  }
}
