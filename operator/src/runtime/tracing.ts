// The operator's spans: one per reconcile (the resource's kind, namespace and name), with every Kubernetes API
// call it makes as a CLIENT child, named `{verb} {resource}` with the HTTP client conventions' attributes. Spans
// exist only when OTEL_* variables start the SDK (`boxyard operator` calls startTelemetry); otherwise the API's
// no-op tracer makes these calls free.
import { SpanKind, SpanStatusCode, context, propagation, trace, type Span } from '@opentelemetry/api';

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
    { kind: SpanKind.INTERNAL, root: true, attributes: { 'boxyard.controller': controller, 'k8s.namespace.name': namespace, 'boxyard.resource.kind': kind, 'boxyard.resource.name': name } },
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

/** One API request as a CLIENT span; `headers` get the traceparent (the apiserver joins it when it traces). */
export async function traceApiCall<T>(request: { method: string; verb: string; resource: string; url: string }, headers: Record<string, string>, run: () => Promise<{ value: T; status: number }>): Promise<T> {
  if (!trace.getSpan(context.active())) return (await run()).value; // watches and leader election outside reconciles
  const url = new URL(request.url);
  return tracer.startActiveSpan(
    `${request.verb} ${request.resource}`,
    { kind: SpanKind.CLIENT, attributes: { 'http.request.method': request.method, 'server.address': url.hostname, 'server.port': Number(url.port || 443), 'url.full': `${url.origin}${url.pathname}`, 'k8s.resource': request.resource } },
    async (span) => {
      propagation.inject(context.active(), headers);
      try {
        const { value, status } = await run();
        span.setAttribute('http.response.status_code', status);
        // A 404 or 409 is an answer the reconciler expects, not a failed call.
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
        return value;
      } catch (error) {
        failed(span, error); // no answer at all
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
