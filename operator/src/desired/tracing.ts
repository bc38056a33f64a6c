// Where a service pod sends its traces: the standard OTEL_* variables, from the resource's
// spec.monitoring.tracing, else from the operator's own OTEL_* settings (the chart's `tracing` values), so one
// collector set at install reaches every service and, through the terminal gateway, its session pods.
import type { EnvVar } from 'kubernetes-types/core/v1.d.ts';
import type { ServiceResource } from '../crds/types.ts';
import { childName } from './common.ts';
import type { KindInfo } from './kinds.ts';

export interface TracingDefaults {
  /** OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); no endpoint, no tracing. */
  endpoint?: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL (the SDK's default when unset). */
  protocol?: string;
  /** Share of new traces kept (0..1); requests that arrive inside a sampled trace are always kept. */
  sampleRatio?: number;
}

/** The operator's OTEL_* settings, read once at start. */
export function tracingDefaultsFrom(env: NodeJS.ProcessEnv): TracingDefaults {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? undefined : env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const ratio =
    env.OTEL_TRACES_SAMPLER === 'parentbased_traceidratio' || env.OTEL_TRACES_SAMPLER === 'traceidratio' ? Number(env.OTEL_TRACES_SAMPLER_ARG) : undefined;
  return {
    ...(env.OTEL_SDK_DISABLED === 'true' || !endpoint ? {} : { endpoint }),
    ...(env.OTEL_EXPORTER_OTLP_PROTOCOL ? { protocol: env.OTEL_EXPORTER_OTLP_PROTOCOL } : {}),
    ...(ratio !== undefined && Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? { sampleRatio: ratio } : {}),
  };
}

/** The container's OTEL_* environment (empty: tracing off). POD_NAME must be set before it (downward API). */
export function tracingEnv(kind: KindInfo, resource: ServiceResource, defaults: TracingDefaults = {}): EnvVar[] {
  const spec = resource.spec.monitoring?.tracing;
  if (spec?.enabled === false) return [];
  const endpoint = spec?.endpoint ?? defaults.endpoint;
  if (!endpoint) return [];
  const ratio = spec?.sampleRatio ?? defaults.sampleRatio ?? 1;
  const protocol = spec?.endpoint ? 'http/protobuf' : (defaults.protocol ?? 'http/protobuf');
  const attributes = [
    `k8s.namespace.name=${resource.metadata.namespace}`,
    'k8s.pod.name=$(POD_NAME)',
    `k8s.deployment.name=${childName(kind, resource.metadata.name)}`,
    `boxyard.resource.kind=${kind.kind}`,
  ];
  return [
    { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: endpoint },
    { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', value: protocol },
    { name: 'OTEL_SERVICE_NAME', value: `boxyard-${kind.service}` },
    { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
    { name: 'OTEL_TRACES_SAMPLER_ARG', value: String(ratio) },
    // Traces only: the services export metrics to Prometheus and logs to stdout.
    { name: 'OTEL_METRICS_EXPORTER', value: 'none' },
    { name: 'OTEL_LOGS_EXPORTER', value: 'none' },
    { name: 'OTEL_RESOURCE_ATTRIBUTES', value: attributes.join(',') },
  ];
}
