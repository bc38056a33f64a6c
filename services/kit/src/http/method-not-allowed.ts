// A path that exists with other methods answers 405 with `Allow` (RFC 9110), not 404: fastify only knows
// "no route", so a second router of the same paths tells which methods a path has.
import FindMyWay from 'find-my-way';
import type { FastifyInstance, HTTPMethods } from 'fastify';

export interface RouteTable {
  /** The methods `path` is routed for (empty: the path does not exist). */
  allowed(path: string): string[];
}

export function trackRoutes(app: FastifyInstance): RouteTable {
  const router = FindMyWay();
  const methods = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of ([] as HTTPMethods[]).concat(route.method)) {
      try {
        router.on(method as never, route.url, () => {});
        methods.add(method);
      } catch {
        // The same method and path registered twice with constraints (host, version): one entry is enough.
      }
    }
  });
  return {
    allowed(path) {
      return [...methods].filter((method) => router.find(method as never, path) !== null).sort();
    },
  };
}
