// trace_id / span_id (and trace_flags) of the active span, for pino's mixin: the field names the OpenTelemetry log
// data model and the collectors' log parsers use. Nothing when there is no trace (tracing off, background work).
import { context, isSpanContextValid, trace } from '@opentelemetry/api';

export function traceIdsOfActiveSpan(): Record<string, string> {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const ids = span.spanContext();
  if (!isSpanContextValid(ids)) return {};
  return { trace_id: ids.traceId, span_id: ids.spanId, trace_flags: `0${ids.traceFlags.toString(16)}`.slice(-2) };
}
