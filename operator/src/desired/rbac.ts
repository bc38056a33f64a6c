// The terminal gateway's identity: a ServiceAccount bound to a Role that lets it manage session pods (and the
// NetworkPolicies that fence them) in its own namespace, nothing else.
import type { V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
import type { ServiceResource } from '../crds/types.ts';
import type { KubeObject } from '../kube/types.ts';
import { asObject, childMeta, childName } from './common.ts';
import type { KindInfo } from './kinds.ts';

export const GATEWAY_RULES = [
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch'] },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch'] },
];

export function desiredGatewayRbac(kind: KindInfo, resource: ServiceResource): KubeObject[] {
  if (!kind.managesPods) return [];
  const name = childName(kind, resource.metadata.name);
  const account: V1ServiceAccount = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: childMeta(kind, resource) };
  const role: V1Role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: childMeta(kind, resource), rules: GATEWAY_RULES };
  const binding: V1RoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: childMeta(kind, resource),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: resource.metadata.namespace }],
  };
  return [asObject(account), asObject(role), asObject(binding)];
}
