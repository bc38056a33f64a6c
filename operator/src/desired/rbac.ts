// The terminal gateway's identity: a ServiceAccount bound, in its own namespace only, to the ClusterRole the chart
// ships (pods, the NetworkPolicies that fence them, users' home volume claims). The operator holds `bind` on that one ClusterRole instead
// of the pod rights themselves: RBAC lets a binding be created by whoever holds every permission it grants, or
// `bind` on the role it refers to.
import type { ServiceAccount } from 'kubernetes-types/core/v1.d.ts';
import type { RoleBinding } from 'kubernetes-types/rbac/v1.d.ts';
import type { ServiceResource } from '../crds/types.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { asObject, childMeta, childName } from './common.ts';
import type { KindInfo } from './kinds.ts';

/** The ClusterRole's name when the operator is not told another (the chart's, for a release named boxyard). */
export const DEFAULT_GATEWAY_CLUSTER_ROLE = 'boxyard-terminal-gateway';

/** What the chart's gateway ClusterRole grants (charts/boxyard/templates/rbac.yaml; chart.test.ts keeps them equal). */
export const GATEWAY_RULES = [
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'watch', 'create', 'delete'] },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['create', 'patch'] },
  // Users' persistent homes (sessionPod.home): created at a user's first session, never deleted by the gateway.
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['create'] },
];

/**
 * Named `<name>-terminal-gateway`: earlier versions bound a Role under `<name>-terminal`, and a binding's roleRef
 * cannot change, so the old binding is pruned and this one created beside it.
 */
export const gatewayBindingName = (kind: KindInfo, name: string): string => `${childName(kind, name)}-gateway`;

export function desiredGatewayRbac(kind: KindInfo, resource: ServiceResource, clusterRole = DEFAULT_GATEWAY_CLUSTER_ROLE): KubeObject[] {
  if (!kind.managesPods) return [];
  const name = childName(kind, resource.metadata.name);
  const account: ServiceAccount = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: childMeta(kind, resource) };
  const binding: RoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: childMeta(kind, resource, gatewayBindingName(kind, resource.metadata.name)),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
    subjects: [{ kind: 'ServiceAccount', name, namespace: resource.metadata.namespace }],
  };
  return [asObject(account), asObject(binding)];
}
