// One CLIENT span per PostgreSQL query, as the OpenTelemetry database conventions name it, made by a slonik
// interceptor: slonik's driver loads `pg` where module patching (instrumentation-pg) cannot reach it under ESM,
// and the interceptor runs in the caller's context, so the span is a child of the request's span.
import { SpanKind, SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import type { Interceptor } from 'slonik';

const tracer = trace.getTracer('@boxyard/kit/database');
const SPAN = Symbol('boxyard.span');

/** SELECT, INSERT, ... (or WITH): the statement's first keyword. */
const operationOf = (sql: string) => /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'QUERY';

export function databaseSpanInterceptor(url: string): Interceptor {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'postgres';
  const server = { 'server.address': parsed.hostname, 'server.port': Number(parsed.port || 5432) };
  const end = (sandbox: Record<string | symbol, unknown>, error?: Error) => {
    const span = sandbox[SPAN] as Span | undefined;
    if (!span) return;
    if (error) {
      span.recordException(error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      span.setAttribute('error.type', error.name);
    }
    span.end();
  };
  return {
    name: 'boxyard-database-spans',
    beforeQueryExecution: (queryContext, query) => {
      // Only inside a trace: background work (the reaper, the event bus) would otherwise make a trace per query.
      if (!trace.getSpan(context.active())) return null;
      const operation = operationOf(query.sql);
      (queryContext.sandbox as Record<symbol, unknown>)[SPAN] = tracer.startSpan(`${operation} ${database}`, {
        kind: SpanKind.CLIENT,
        // The statement as written, with $n placeholders: values (passwords, tokens) never reach a span.
        attributes: { 'db.system.name': 'postgresql', 'db.namespace': database, 'db.operation.name': operation, 'db.query.text': query.sql, ...server },
      });
      return null;
    },
    afterQueryExecution: (queryContext) => {
      end(queryContext.sandbox);
      return null;
    },
    queryExecutionError: (queryContext, _query, error) => {
      end(queryContext.sandbox, error);
      return null;
    },
  };
}
