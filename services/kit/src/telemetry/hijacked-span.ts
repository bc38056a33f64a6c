// @fastify/otel ends a request's server span in onSend (or, failing that, in onResponse once the response finished),
// which a WebSocket upgrade or a download cut off mid-body never reaches: such spans stayed open and never arrived.
import type { FastifyRequest } from 'fastify';

type RequestSpan = { setAttribute(key: string, value: number): unknown; end(): void; isRecording(): boolean };

/** Ends the server span of a request whose reply was hijacked, with the status code it answered. */
export function endHijackedSpan(request: FastifyRequest, statusCode: number): void {
  const span = (request as { opentelemetry?: () => { span?: RequestSpan | null } }).opentelemetry?.()?.span;
  if (!span?.isRecording()) return;
  span.setAttribute('http.response.status_code', statusCode);
  span.end();
}

/**
 * Ends the server span of an upgraded request with status 101. Call first thing in a WebSocket handler: the HTTP
 * exchange is over once the 101 is sent; the session that follows is not part of it (it may last hours).
 */
export function endUpgradeSpan(request: FastifyRequest): void {
  endHijackedSpan(request, 101);
}
