// The Deployment of a service: restricted pod security, probes on /health and /health/ready, config from the
// ConfigMap and secrets as files, and a checksum annotation so any change of either rolls the pods.
import type { Deployment } from 'kubernetes-types/apps/v1.d.ts';
import type { PodSpec, ResourceRequirements, VolumeProjection } from 'kubernetes-types/core/v1.d.ts';
import type { Resources, ServiceResource } from '../crds/types.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import {
  CHECKSUM_ANNOTATION,
  CONFIG_FILE,
  METRICS_PORT,
  PRE_STOP_SECONDS,
  RUN_AS_USER,
  SECRETS_DIR,
  asObject,
  childMeta,
  childName,
  selectorLabels,
  labelsFor,
  type SecretSources,
} from './common.ts';
import type { KindInfo } from './kinds.ts';
import { tracingEnv, type TracingDefaults } from './tracing.ts';

export const resourceRequirements = (resources: Resources): ResourceRequirements => {
  const strings = (map?: Record<string, string | number>) =>
    map && Object.keys(map).length ? Object.fromEntries(Object.entries(map).map(([k, v]) => [k, String(v)])) : undefined;
  const requests = strings(resources.requests);
  const limits = strings(resources.limits);
  return { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) };
};

/** One read-only volume with every secret file the config names (paths: config.ts secretFiles). */
export function secretProjections(sources: SecretSources): VolumeProjection[] {
  const projections: VolumeProjection[] = [
    { secret: { name: sources.database.name, items: [{ key: sources.database.key, path: 'database/url' }] } },
    { secret: { name: sources.session.name, items: [{ key: sources.session.key, path: 'session/secret' }] } },
    { secret: { name: sources.admin.name, items: [{ key: sources.admin.key, path: 'admin/password' }] } },
  ];
  if (sources.storage) {
    projections.push({
      secret: {
        name: sources.storage.name,
        items: [
          { key: sources.storage.accessKey, path: 'storage/access_key' },
          { key: sources.storage.secretKey, path: 'storage/secret_key' },
        ],
      },
    });
  }
  return projections;
}

export interface DeploymentInput {
  kind: KindInfo;
  resource: ServiceResource;
  image: string;
  sources: SecretSources;
  /** Digest of config.yaml and of the secret values the pods read. */
  checksum: string;
  /** The operator's OTEL_* settings, for resources that set no endpoint of their own. */
  tracing?: TracingDefaults;
}

export function desiredDeployment({ kind, resource, image, sources, checksum, tracing }: DeploymentInput): KubeObject {
  const { spec } = resource;
  const otel = tracingEnv(kind, resource, tracing);
  const name = childName(kind, resource.metadata.name);
  const selector = selectorLabels(kind, resource.metadata.name);
  const podSpec: PodSpec = {
    ...(kind.managesPods ? { serviceAccountName: name } : {}),
    // Only the terminal gateway talks to the Kubernetes API (to start session pods).
    automountServiceAccountToken: kind.managesPods,
    enableServiceLinks: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: RUN_AS_USER,
      runAsGroup: RUN_AS_USER,
      fsGroup: RUN_AS_USER,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    ...(spec.imagePullSecrets?.length ? { imagePullSecrets: spec.imagePullSecrets.map((s) => ({ name: s.name })) } : {}),
    ...(spec.nodeSelector && Object.keys(spec.nodeSelector).length ? { nodeSelector: spec.nodeSelector } : {}),
    ...(spec.tolerations?.length ? { tolerations: spec.tolerations as PodSpec['tolerations'] } : {}),
    ...(spec.affinity && Object.keys(spec.affinity).length ? { affinity: spec.affinity as PodSpec['affinity'] } : {}),
    ...(spec.replicas > 1
      ? {
          topologySpreadConstraints: [
            { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } },
          ],
        }
      : {}),
    terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds,
    containers: [
      {
        name: kind.service,
        image,
        imagePullPolicy: spec.imagePullPolicy,
        args: ['serve', kind.service, '--config', CONFIG_FILE],
        ports: [
          { name: 'http', containerPort: kind.port, protocol: 'TCP' },
          { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
        ],
        ...(otel.length ? { env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, ...otel] } : {}),
        resources: resourceRequirements(spec.resources),
        // Migrations run before the listener opens: the startup probe gives them two minutes.
        startupProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 60 },
        livenessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
        readinessProbe: { httpGet: { path: '/health/ready', port: 'http' }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 3 },
        // The pod leaves the Service's endpoints while this waits; SIGTERM (and the service's drain) comes after.
        lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SECONDS } } },
        securityContext: {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
        volumeMounts: [
          { name: 'config', mountPath: CONFIG_FILE, subPath: 'config.yaml', readOnly: true },
          { name: 'secrets', mountPath: SECRETS_DIR, readOnly: true },
          { name: 'tmp', mountPath: '/tmp' },
        ],
      },
    ],
    volumes: [
      { name: 'config', configMap: { name: `${name}-config`, items: [{ key: 'config.yaml', path: 'config.yaml' }] } },
      { name: 'secrets', projected: { defaultMode: 0o440, sources: secretProjections(sources) } },
      { name: 'tmp', emptyDir: { sizeLimit: '1Gi' } },
    ],
  };
  const deployment: Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: childMeta(kind, resource),
    spec: {
      replicas: spec.replicas,
      revisionHistoryLimit: 5,
      selector: { matchLabels: selector },
      // Surge first: a new pod must be ready before an old one goes.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: labelsFor(kind, resource.metadata.name),
          annotations: { ...(spec.podAnnotations ?? {}), [CHECKSUM_ANNOTATION]: checksum },
        },
        spec: podSpec,
      },
    },
  };
  return asObject(deployment);
}
