// The kinds the operator reconciles: the registry's cluster kinds (declared beside each service), with the resource
// type the operator reads and writes and the service-specific config sections a resource's spec becomes.
import { configFromSpec, type ClusterContext, type ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { kinds } from '@boxyard/registry/kinds.ts';
import type { ServiceSpec } from '../crds/types.ts';
import { customResourceType, type ResourceType } from '@boxyard/kit/kube/resources.ts';

export type ConfigContext = ClusterContext;

export interface KindInfo {
  kind: string;
  resource: ResourceType;
  /** The service name of `boxyard serve <service>`; also the suffix of every child's name. */
  service: string;
  port: number;
  storage: boolean | 'optional';
  /** Needs a ServiceAccount with a Role to manage pods in its namespace. */
  managesPods: boolean;
  /** The service-specific sections of config.yaml (contract key names). */
  serviceConfig(spec: ServiceSpec, context: ConfigContext): Record<string, unknown>;
}

export function kindInfo(kind: ClusterKind): KindInfo {
  return {
    kind: kind.kind,
    resource: customResourceType(kind.kind, kind.plural),
    service: kind.service,
    port: kind.port,
    storage: kind.storage,
    managesPods: kind.managesPods,
    serviceConfig: (spec, context) => configFromSpec(kind, spec as unknown as Record<string, unknown>, context),
  };
}

export const allKinds: KindInfo[] = kinds.map(kindInfo);

/** The kind named `kind` (BoxRepository, ...); throws for a kind the registry does not have. */
export function kindNamed(kind: string): KindInfo {
  const found = allKinds.find((k) => k.kind === kind);
  if (!found) throw new Error(`the registry has no kind ${kind}`);
  return found;
}
