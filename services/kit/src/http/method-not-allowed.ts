// A path that exists with other methods answers 405 with `Allow` (RFC 9110), not 404: fastify only knows
// "no route", so a second router of the same paths tells which methods a path has.
import FindMyWay from 'find-my-way';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { HttpError } from './http-error.ts';

export interface MethodTable {
  /** The methods `path` is routed for (empty: the path does not exist), leaving out routes of the `except` URLs. */
  allowed(path: string, options?: { except?: string[] }): string[];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Which methods a concrete path is routed for (405 and `Allow`). */
    methodTable: MethodTable;
  }
}

export const methodNotAllowed = (method: string, path: string, allowed: string[]) =>
  new HttpError(405, `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, { headers: { allow: allowed.join(', ') } });

export function trackRoutes(app: FastifyInstance): MethodTable {
  const router = FindMyWay();
  const methods = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of ([] as HTTPMethods[]).concat(route.method)) {
      try {
        router.on(method as never, route.url, () => {}, { url: route.url });
        methods.add(method);
      } catch {
        // The same method and path registered twice with constraints (host, version): one entry is enough.
      }
    }
  });
  return {
    allowed(path, options = {}) {
      const except = new Set(options.except ?? []);
      return [...methods].filter((method) => {
        const found = router.find(method as never, path);
        return found !== null && !except.has((found.store as { url: string }).url);
      }).sort();
    },
  };
}
