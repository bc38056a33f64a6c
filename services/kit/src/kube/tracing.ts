// Every Kubernetes API request as a CLIENT span named `{verb} {resource}` with the HTTP client conventions'
// attributes, made only inside a trace (a reconcile, a terminal start): watches and leader election outside one
// make no root spans. The traceparent goes into the request's headers, so an apiserver that traces joins it.
import { context, propagation, SpanStatusCode } from '@opentelemetry/api';
import { inClientSpan } from '../telemetry/client-span.ts';

export interface ApiCall {
  method: string;
  verb: string;
  resource: string;
  url: string;
  namespace?: string;
}

export async function traceApiCall<T>(
  tracerName: string,
  request: ApiCall,
  headers: Record<string, string>,
  run: () => Promise<{ value: T; status: number }>,
): Promise<T> {
  const url = new URL(request.url);
  const attributes = {
    'http.request.method': request.method,
    'server.address': url.hostname,
    'server.port': Number(url.port || 443),
    'url.full': `${url.origin}${url.pathname}`,
    'k8s.resource': request.resource,
    ...(request.namespace ? { 'k8s.namespace.name': request.namespace } : {}),
  };
  return inClientSpan(tracerName, `${request.verb} ${request.resource}`, attributes, async (span) => {
    if (span) propagation.inject(context.active(), headers);
    const { value, status } = await run();
    span?.setAttribute('http.response.status_code', status);
    // A 404 or 409 is an answer the caller expects, not a failed call.
    if (status >= 500) span?.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
    return value;
  });
}
