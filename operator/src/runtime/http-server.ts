// The operator's own HTTP endpoints: /metrics (Prometheus), /health (liveness: the process answers) and
// /health/ready (readiness: a standby replica is ready; the leader once its caches have synced).
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

export interface OperatorHttpServer {
  port: number;
  close(): Promise<void>;
}

export async function startHttpServer(options: { host?: string; port: number; registry: Registry; ready: () => boolean }): Promise<OperatorHttpServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end(JSON.stringify({ status: 'method not allowed' }));
      return;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
      return;
    }
    if (path === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
      return;
    }
    if (path === '/health/ready') {
      const ready = options.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ready ? 'ready' : 'not ready' }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
