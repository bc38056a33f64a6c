// The gateway → agent hop in one trace: the gateway sends `traceparent` on its REST calls and on the WebSocket
// attach, and the agent (a process or pod of its own, exporting to the same collector) makes its SERVER span a
// child of it. The agent gets the gateway's OTEL_* settings explicitly (it starts with a clean environment) and
// removes them before a shell can see them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';

const tracer = trace.getTracer('@boxyard/terminal-agent');

/**
 * The OTEL_* variables of `env` (what the agent needs to export where the gateway does) and the active trace as
 * TRACEPARENT / TRACESTATE (the environment carrier of the OpenTelemetry spec): the agent's start joins the
 * start request's trace.
 */
export function telemetryEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return {
    // Not the gateway's service name: the agent is `boxyard-terminal-agent`.
    ...Object.fromEntries(
      Object.entries(env).filter(
        (entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[0] !== 'OTEL_SERVICE_NAME' && entry[1] !== undefined,
      ),
    ),
    ...Object.fromEntries(Object.entries(carrier).map(([name, value]) => [name.toUpperCase(), value])),
  };
}

/** Runs the agent's start-up in a span continuing the trace its environment names (TRACEPARENT), if any. */
export async function traceAgentStart<T>(env: NodeJS.ProcessEnv, run: () => Promise<T>): Promise<T> {
  const parent = propagation.extract(context.active(), { traceparent: env.TRACEPARENT ?? '', tracestate: env.TRACESTATE ?? '' });
  if (!trace.getSpan(parent)) return run();
  const span = tracer.startSpan('terminal-agent start', { kind: SpanKind.INTERNAL }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), run);
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/** Adds the active trace (traceparent, tracestate) to outgoing headers. */
export function withTraceparent<T extends Record<string, string | number>>(headers: T): T {
  propagation.inject(context.active(), headers);
  return headers;
}

/** Runs an agent request handler inside a SERVER span continuing the caller's trace; ends with the response. */
export function traceAgentRequest(request: IncomingMessage, response: ServerResponse | undefined, route: string, handle: () => void): void {
  const parent = propagation.extract(context.active(), request.headers);
  if (!trace.getSpan(parent)) return handle(); // no caller trace: the agent starts none of its own
  const span = tracer.startSpan(
    `${request.method ?? 'GET'} ${route}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method ?? 'GET', 'http.route': route, 'url.path': route } },
    parent,
  );
  const finish = (status: number) => {
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  if (response) response.once('finish', () => finish(response.statusCode)).once('close', () => span.isRecording() && finish(response.statusCode));
  context.with(trace.setSpan(parent, span), handle);
  if (!response) finish(101); // an upgrade: the span covers the handshake
}
