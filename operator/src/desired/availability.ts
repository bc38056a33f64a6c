// Availability and monitoring: a PodDisruptionBudget once there is more than one replica, and a ServiceMonitor for
// the Prometheus Operator when its CRD is installed.
import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.d.ts';
import type { ServiceResource } from '../crds/types.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { asObject, childMeta, selectorLabels } from './common.ts';
import type { KindInfo } from './kinds.ts';

export function desiredPodDisruptionBudget(kind: KindInfo, resource: ServiceResource): KubeObject | undefined {
  if (resource.spec.replicas <= 1) return undefined; // with one replica a PDB would block node drains forever
  const pdb: PodDisruptionBudget = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: childMeta(kind, resource),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(kind, resource.metadata.name) } },
  };
  return asObject(pdb);
}

export function desiredServiceMonitor(kind: KindInfo, resource: ServiceResource, available: boolean): KubeObject | undefined {
  const monitor = resource.spec.monitoring?.serviceMonitor;
  if (!available || !monitor?.enabled) return undefined;
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: childMeta(kind, resource),
    spec: {
      selector: { matchLabels: selectorLabels(kind, resource.metadata.name) },
      endpoints: [{ port: 'metrics', path: '/metrics', interval: monitor.interval }],
    },
  };
}
