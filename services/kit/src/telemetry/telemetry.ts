// OpenTelemetry, configured only by the standard OTEL_* variables. Nothing starts when none is set, so a
// default install never tries to reach a collector that isn't there.
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { NodeSDK } from '@opentelemetry/sdk-node';

const triggers = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_TRACES_EXPORTER'];

export interface Telemetry {
  enabled: boolean;
  shutdown(): Promise<void>;
}

let started: Telemetry | undefined;

/** Starts tracing once per process (before the first fastify instance is created). */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): Telemetry {
  if (started) return started;
  if (env.OTEL_SDK_DISABLED === 'true' || !triggers.some((name) => env[name])) {
    started = { enabled: false, shutdown: async () => {} };
    return started;
  }
  env.OTEL_SERVICE_NAME ??= serviceName;
  const sdk = new NodeSDK({
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // The request and handler spans only: a span per lifecycle hook (auth, origin check, rate limit... a dozen per
        // request) cost a third of the metadata throughput at 100% sampling and told an operator little.
        instrumentHooks: false,
        ignorePaths: (opts) => ['/health', '/health/ready', '/metrics'].includes(opts.url),
        // The HTTP conventions name a server span `{method} {route}` (the template, never the raw path).
        requestHook: (span, request) => span.updateName(request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : request.method),
      }),
    ],
  });
  sdk.start();
  started = { enabled: true, shutdown: () => sdk.shutdown() };
  return started;
}
