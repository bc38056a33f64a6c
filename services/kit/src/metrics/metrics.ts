// Prometheus series: default process metrics plus an HTTP duration histogram labelled by route template. They are
// exposed by metrics-listener.ts, apart from the public port.
import { X509Certificate } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from '@prometheus-io/client';

export function createMetricsRegistry(labels: Record<string, string>): Registry {
  // One registry per app, so several apps in one process (tests, `boxyard dev`) never collide.
  const registry = new Registry();
  registry.setDefaultLabels(labels);
  collectDefaultMetrics({ register: registry });
  return registry;
}

export function installMetrics(app: FastifyInstance, registry: Registry): void {
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    // The template (`/boxes/:box`), never the raw path: raw paths would explode the label's cardinality.
    const route = request.routeOptions.url ?? 'unmatched';
    duration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
  // No /metrics route here: the series are served on a listener of their own (metrics-listener.ts).
}

/**
 * When the TLS listener's certificate expires (as cert-manager and the blackbox exporter name it), so an alert
 * fires well before clients start refusing the service.
 */
export function certificateExpiryMetric(registry: Registry, pem: string): void {
  const gauge = new Gauge({
    name: 'boxyard_tls_certificate_expiry_timestamp_seconds',
    help: "Unix time at which the TLS listener's certificate expires.",
    labelNames: ['subject'],
    registers: [registry],
  });
  const certificate = new X509Certificate(pem);
  gauge.set({ subject: certificate.subject.replace(/\n/g, ', ') }, Math.floor(Date.parse(certificate.validTo) / 1000));
}
