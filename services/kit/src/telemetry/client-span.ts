// A CLIENT span around a call to another system (storage, the Kubernetes API...), made only inside a trace: work
// outside any request (sweeps, reconnects) makes no root spans of its own.
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

export async function inClientSpan<T>(tracerName: string, name: string, attributes: Attributes, run: (span?: Span) => Promise<T>): Promise<T> {
  if (!trace.getSpan(context.active())) return run();
  return trace.getTracer(tracerName).startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      return await run(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      span.setAttribute('error.type', (error as Error).name ?? 'Error');
      throw error;
    } finally {
      span.end();
    }
  });
}
