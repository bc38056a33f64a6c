// How the service is reached: a ClusterIP Service on port 80 (and the metrics port), an optional Ingress (to port 80
// only), and a NetworkPolicy that admits traffic to the service port (from the peers the spec names, or from
// anywhere) and to the metrics port from inside the cluster only.
import type { Service } from 'kubernetes-types/core/v1.d.ts';
import type { Ingress } from 'kubernetes-types/networking/v1.d.ts';
import type { ServiceResource } from '../crds/types.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { METRICS_PORT, asObject, childMeta, childName, selectorLabels } from './common.ts';
import type { KindInfo } from './kinds.ts';

export function desiredService(kind: KindInfo, resource: ServiceResource): KubeObject {
  const service: Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMeta(kind, resource),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(kind, resource.metadata.name),
      ports: [
        { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
        { name: 'metrics', port: METRICS_PORT, targetPort: 'metrics', protocol: 'TCP' },
      ],
    },
  };
  return asObject(service);
}

export function desiredIngress(kind: KindInfo, resource: ServiceResource): KubeObject | undefined {
  const ingress = resource.spec.ingress;
  if (!ingress) return undefined;
  const name = childName(kind, resource.metadata.name);
  const meta = childMeta(kind, resource);
  const object: Ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { ...meta, ...(ingress.annotations && Object.keys(ingress.annotations).length ? { annotations: ingress.annotations } : {}) },
    spec: {
      ...(ingress.className ? { ingressClassName: ingress.className } : {}),
      rules: [
        {
          ...(ingress.host ? { host: ingress.host } : {}),
          http: { paths: [{ path: ingress.path ?? '/', pathType: 'Prefix', backend: { service: { name, port: { name: 'http' } } } }] },
        },
      ],
      ...(ingress.tls && ingress.host ? { tls: [{ hosts: [ingress.host], secretName: ingress.tls.secretName }] } : {}),
    },
  };
  return asObject(object);
}

export function desiredNetworkPolicy(kind: KindInfo, resource: ServiceResource): KubeObject | undefined {
  const policy = resource.spec.networkPolicy;
  if (!policy?.enabled) return undefined;
  // Plain JSON: `policy.from` holds the resource's peers in the API's own shape.
  const object = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: childMeta(kind, resource),
    spec: {
      podSelector: { matchLabels: selectorLabels(kind, resource.metadata.name) },
      policyTypes: ['Ingress'],
      ingress: [
        {
          ports: [{ port: kind.port, protocol: 'TCP' }],
          ...(policy.from?.length ? { from: policy.from } : {}),
        },
        // Prometheus, wherever it runs in the cluster; never from outside it.
        { ports: [{ port: METRICS_PORT, protocol: 'TCP' }], from: [{ namespaceSelector: {} }] },
      ],
    },
  };
  return asObject(object);
}
