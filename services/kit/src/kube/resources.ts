// The resource types the operator and the terminal's pod backend read and write, and the REST paths of their
// objects. A fixed table instead of discovery: Boxyard only ever touches these, and a path that cannot be built
// is a programming error.
export interface ResourceType {
  group: string; // '' for the core group
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

const r = (group: string, version: string, kind: string, plural: string, namespaced = true): ResourceType => ({ group, version, kind, plural, namespaced });

export const GROUP = 'boxyard.io';
export const VERSION = 'v1alpha1';

/** The type of one of Boxyard's own kinds (the registry's cluster kinds). */
export const customResourceType = (kind: string, plural: string): ResourceType => r(GROUP, VERSION, kind, plural);

export const resources = {
  // Boxyard's kinds, by name for the tests and tools; the operator builds its list from the registry (desired/kinds.ts).
  boxRepository: customResourceType('BoxRepository', 'boxrepositories'),
  fileShare: customResourceType('FileShare', 'fileshares'),
  terminalPool: customResourceType('TerminalPool', 'terminalpools'),
  backup: customResourceType('Backup', 'backups'),
  scheduledBackup: customResourceType('ScheduledBackup', 'scheduledbackups'),
  job: r('batch', 'v1', 'Job', 'jobs'),
  pod: r('', 'v1', 'Pod', 'pods'),
  deployment: r('apps', 'v1', 'Deployment', 'deployments'),
  service: r('', 'v1', 'Service', 'services'),
  configMap: r('', 'v1', 'ConfigMap', 'configmaps'),
  secret: r('', 'v1', 'Secret', 'secrets'),
  persistentVolumeClaim: r('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims'),
  serviceAccount: r('', 'v1', 'ServiceAccount', 'serviceaccounts'),
  event: r('', 'v1', 'Event', 'events'),
  namespace: r('', 'v1', 'Namespace', 'namespaces', false),
  role: r('rbac.authorization.k8s.io', 'v1', 'Role', 'roles'),
  roleBinding: r('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings'),
  ingress: r('networking.k8s.io', 'v1', 'Ingress', 'ingresses'),
  networkPolicy: r('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies'),
  podDisruptionBudget: r('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets'),
  serviceMonitor: r('monitoring.coreos.com', 'v1', 'ServiceMonitor', 'servicemonitors'),
  lease: r('coordination.k8s.io', 'v1', 'Lease', 'leases'),
} as const satisfies Record<string, ResourceType>;

export const apiVersionOf = (type: ResourceType): string => (type.group ? `${type.group}/${type.version}` : type.version);

const byApiVersionKind = new Map<string, ResourceType>(Object.values(resources).map((t) => [`${apiVersionOf(t)}/${t.kind}`, t]));

/** The resource type of an object by its apiVersion and kind; throws for a kind the operator does not know. */
export function resourceTypeOf(object: { apiVersion?: string; kind?: string }): ResourceType {
  const type = byApiVersionKind.get(`${object.apiVersion}/${object.kind}`);
  if (!type) throw new Error(`unknown resource type ${object.apiVersion}/${object.kind}`);
  return type;
}

/** /api/v1/namespaces/ns/configmaps, /apis/apps/v1/deployments (all namespaces), ... */
export function collectionPath(type: ResourceType, namespace?: string): string {
  const root = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  return type.namespaced && namespace ? `${root}/namespaces/${encodeURIComponent(namespace)}/${type.plural}` : `${root}/${type.plural}`;
}

export function objectPath(type: ResourceType, namespace: string | undefined, name: string, subresource?: string): string {
  if (type.namespaced && !namespace) throw new Error(`${type.kind} ${name}: a namespace is required`);
  return `${collectionPath(type, namespace)}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;
}
