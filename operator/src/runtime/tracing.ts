// The operator's spans: one per reconcile (the resource's kind, namespace and name), with every Kubernetes API
// call it makes as a CLIENT child (the kit's client makes those: kit/kube/tracing.ts). Spans
// exist only when OTEL_* variables start the SDK (`boxyard operator` calls startTelemetry); otherwise the API's
// no-op tracer makes these calls free.
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';

const tracer = trace.getTracer('@boxyard/operator');

function failed(span: Span, error: unknown): void {
  span.recordException(error as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message ?? String(error) });
  span.setAttribute('error.type', (error as Error).name ?? 'Error');
}

/** Runs one reconcile of `key` (namespace/name) inside a new root span. */
export function traceReconcile<T>(controller: string, kind: string, key: string, run: (span: Span) => Promise<T>): Promise<T> {
  const [namespace, name] = key.split('/') as [string, string];
  // A root span: a reconcile is caused by the cluster's state, not by the event that happened to queue it.
  return tracer.startActiveSpan(
    `reconcile ${kind}`,
    {
      kind: SpanKind.INTERNAL,
      root: true,
      attributes: { 'boxyard.controller': controller, 'k8s.namespace.name': namespace, 'boxyard.resource.kind': kind, 'boxyard.resource.name': name },
    },
    async (span) => {
      try {
        return await run(span);
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
