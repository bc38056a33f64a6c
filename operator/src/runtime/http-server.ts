// The operator's own HTTP endpoints: /metrics (Prometheus), /health (liveness: the process answers) and
// /health/ready (readiness: a standby replica is ready; the leader once its caches have synced). /metrics asks
// `authorizeMetrics` first when given; the health endpoints stay open for the kubelet's probes.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Registry } from '@prometheus-io/client';
import type { AuthDecision } from './metrics-auth.ts';

export interface OperatorHttpServer {
  port: number;
  close(): Promise<void>;
}

export interface HttpServerOptions {
  host?: string;
  port: number;
  registry: Registry;
  ready: () => boolean;
  authorizeMetrics?: (authorization: string | undefined, path: string) => Promise<AuthDecision>;
}

const json = (res: ServerResponse, status: number, body: Record<string, string>, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

export async function startHttpServer(options: HttpServerOptions): Promise<OperatorHttpServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end(JSON.stringify({ status: 'method not allowed' }));
      return;
    }
    if (path === '/metrics') {
      const serve = () =>
        options.registry.metrics().then(
          (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
          () => res.writeHead(500).end(),
        );
      if (!options.authorizeMetrics) {
        void serve();
        return;
      }
      options.authorizeMetrics(req.headers.authorization, path).then(
        (decision) => {
          if (decision.status === 200) return serve();
          json(res, decision.status, { status: decision.message }, decision.status === 401 ? { 'www-authenticate': 'Bearer realm="boxyard-operator"' } : {});
        },
        (error: unknown) => json(res, 503, { status: `cannot check the token with the apiserver: ${(error as Error).message}` }),
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
