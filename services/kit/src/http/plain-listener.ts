// A second, unencrypted listener beside an app that serves HTTPS: the same routes (fastify's own request
// handler), or a redirect to the HTTPS address while `redirectTo` names one. Health probes are always answered
// here, so a probe without TLS keeps working when the redirect starts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface PlainListener {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export interface PlainListenerOptions {
  host: string;
  port: number;
  /** The HTTPS origin to send clients to (e.g. https://example.test:8443), or undefined to serve them here. */
  redirectTo(request: IncomingMessage): string | undefined;
}

const NEVER_REDIRECTED = /^\/health(\/ready)?(\?|$)/;

export async function listenUnencrypted(app: FastifyInstance, options: PlainListenerOptions): Promise<PlainListener> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const origin = NEVER_REDIRECTED.test(request.url ?? '') ? undefined : options.redirectTo(request);
    if (!origin) {
      app.routing(request, response);
      return;
    }
    // 308 keeps the method and body (a POST stays a POST), unlike 301/302.
    response.writeHead(308, { location: `${origin}${request.url ?? '/'}`, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    response.end(`Use HTTPS: ${origin}\n`);
  });
  // The same header, body and idle rules as the app's own listener.
  app.slowClients.attach(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The HTTPS origin a client that reached `request` should use: the public URL when it is HTTPS, else its Host. */
export function httpsOrigin(request: IncomingMessage, httpsPort: number, publicUrl?: string): string {
  if (publicUrl?.startsWith('https://')) return new URL(publicUrl).origin;
  const host = request.headers.host ?? 'localhost';
  // The Host header without its port ([v6] kept in brackets); a bad one falls back to localhost.
  const name = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d+)?$/i.exec(host)?.[1] ?? 'localhost';
  return `https://${name}${httpsPort === 443 ? '' : `:${httpsPort}`}`;
}
