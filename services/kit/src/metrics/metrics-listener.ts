// /metrics on a listener of its own, never on the service's public port: an Ingress routes only the public port,
// so the series (route templates, backlog sizes, error counts) are not published to the internet by accident.
// Loopback by default (`boxyard dev`); in a cluster the operator binds it to the pod address and the Service's
// `metrics` port, which the ServiceMonitor scrapes and the Ingress never names.
import { createServer, type Server } from 'node:http';
import type { Registry } from '@prometheus-io/client';

export interface MetricsListener {
  /** The port it listens on (the configured one, or the one the OS chose for 0). */
  port: number;
  /** http://host:port/metrics */
  url: string;
  close(): Promise<void>;
}

export async function listenMetrics(registry: Registry, options: { host: string; port: number }): Promise<MetricsListener> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: this listener serves GET /metrics only\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics collection failed\n'),
    );
  });
  // A scraper sends one small request at a time: no reason to wait long for anything.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.maxHeadersCount = 50;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    port,
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
