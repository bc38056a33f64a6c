// Matrix rows for the routes every service gets from the kit's createApp: health, readiness, the
// (/metrics is not one: it has a listener of its own, metrics-listener.ts, tested by each service.)
// OpenAPI description and the Swagger UI. They carry no data of users and ask for no credentials, so every
// role (even one holding a revoked credential) gets them.
import type { MatrixRow, RoleSpec } from './access-matrix.ts';

export type Send<R extends string> = (role: R, method: string, path: string) => Promise<number>;

export function operationalRows<R extends string>(roles: RoleSpec<R>[], send: Send<R>): MatrixRow<R>[] {
  const all = (status: number) => Object.fromEntries(roles.filter((r) => !r.notImplemented).map((r) => [r.name, status])) as Partial<Record<R, number>>;
  const row = (route: string, path: string, status = 200): MatrixRow<R> => ({
    route,
    expected: all(status),
    call: (role, method) => send(role, method, path),
  });
  return [
    row('GET /health', '/health'),
    row('GET /health/ready', '/health/ready'),
    row('GET /openapi.json', '/openapi.json'),
    // The UI's page, its script and its static files are public; its old static address sends to the page.
    row('GET /api-docs', '/api-docs'),
    row('HEAD /api-docs/', '/api-docs/'),
    row('GET /api-docs/static/index.html', '/api-docs/static/index.html', 302),
    row('GET /api-docs/static/swagger-initializer.js', '/api-docs/static/swagger-initializer.js'),
    row('GET /api-docs/json', '/api-docs/json'),
    row('GET /api-docs/yaml', '/api-docs/yaml'),
    row('GET /api-docs/static/*', '/api-docs/static/swagger-ui.css'),
    row('HEAD /api-docs/static/*', '/api-docs/static/swagger-ui.css'),
  ];
}
