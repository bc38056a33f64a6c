// The desired children of a resource: a pure function of its spec, the operator's default image, whether the
// ServiceMonitor CRD exists and a digest of the secret values the pods read.
import { createHash } from 'node:crypto';
import type { ConfigMap } from 'kubernetes-types/core/v1.d.ts';
import type { ServiceResource } from '../crds/types.ts';
import { resources, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { desiredPodDisruptionBudget, desiredServiceMonitor } from './availability.ts';
import { asObject, childMeta, childName, publicUrl, secretSources, selectorLabels, type SecretSources } from './common.ts';
import { serviceConfigYaml } from './config.ts';
import { desiredDeployment } from './deployment.ts';
import type { KindInfo } from './kinds.ts';
import { desiredIngress, desiredNetworkPolicy, desiredService } from './network.ts';
import { desiredGatewayRbac } from './rbac.ts';
import type { TracingDefaults } from './tracing.ts';

export interface DesiredInput {
  kind: KindInfo;
  resource: ServiceResource;
  defaultImage: string;
  /** The ClusterRole the terminal gateway is bound to (default: the chart's for a release named boxyard). */
  gatewayClusterRole?: string;
  serviceMonitorAvailable: boolean;
  /** Digest of the referenced and generated secret values (never the values themselves). */
  secretDigest: string;
  /** The operator's OTEL_* settings, passed to service pods of resources that set none. */
  tracing?: TracingDefaults;
}

export interface DesiredState {
  image: string;
  url: string;
  selector: string;
  configYaml: string;
  checksum: string;
  sources: SecretSources;
  /** Applied with server-side apply, in this order (the identity before the pods that use it). */
  objects: KubeObject[];
}

/** Every type a resource of `kind` may own; children of these types that are no longer desired are deleted. */
export function ownedTypes(kind: KindInfo): ResourceType[] {
  const types: ResourceType[] = [
    resources.configMap,
    resources.service,
    resources.deployment,
    resources.ingress,
    resources.networkPolicy,
    resources.podDisruptionBudget,
  ];
  // Roles are no longer created (the gateway is bound to the chart's ClusterRole); one left by an earlier version
  // grants nothing once its binding is pruned, and goes with its resource.
  if (kind.managesPods) types.push(resources.serviceAccount, resources.roleBinding);
  return types;
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export function desiredState(input: DesiredInput): DesiredState {
  const { kind, resource } = input;
  const image = resource.spec.image ?? input.defaultImage;
  const sources = secretSources(kind, resource);
  const configYaml = serviceConfigYaml(kind, resource, image);
  const checksum = sha256(`${configYaml}\n${input.secretDigest}`);
  const configMap: ConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: childMeta(kind, resource, `${childName(kind, resource.metadata.name)}-config`),
    data: { 'config.yaml': configYaml },
  };
  const objects = [
    ...desiredGatewayRbac(kind, resource, input.gatewayClusterRole),
    asObject(configMap),
    desiredService(kind, resource),
    desiredDeployment({ kind, resource, image, sources, checksum, tracing: input.tracing }),
    desiredIngress(kind, resource),
    desiredNetworkPolicy(kind, resource),
    desiredPodDisruptionBudget(kind, resource),
    desiredServiceMonitor(kind, resource, input.serviceMonitorAvailable),
  ].filter((o): o is KubeObject => o !== undefined);
  const selector = Object.entries(selectorLabels(kind, resource.metadata.name))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return { image, url: publicUrl(kind, resource), selector, configYaml, checksum, sources, objects };
}
