// @fastify/otel ends a request's server span in onSend, which a hijacked request (a WebSocket upgrade) never
// reaches: its span stayed open for good, so the upgrade never arrived at the collector. The HTTP exchange is over
// once the 101 is sent; the session that follows is not part of it (it may last hours).
import type { FastifyRequest } from 'fastify';

/** Ends the server span of an upgraded request with status 101. Call first thing in a WebSocket handler. */
export function endUpgradeSpan(request: FastifyRequest): void {
  const otel = (request as { opentelemetry?: () => { span?: { setAttribute(k: string, v: number): unknown; end(): void; isRecording(): boolean } | null } }).opentelemetry?.();
  const span = otel?.span;
  if (!span?.isRecording()) return;
  span.setAttribute('http.response.status_code', 101);
  span.end();
}
