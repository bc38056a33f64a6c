// A path that exists with other methods answers 405 with `Allow` (RFC 9110), not 404: fastify only knows
// "no route", so a second router of the same paths tells which methods a path has.
import FindMyWay from 'find-my-way';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { HttpError } from './http-error.ts';

export interface MethodTable {
  /** The methods `path` is routed for (empty: the path does not exist). */
  allowed(path: string): string[];
  /**
   * Routes of `url` (a catch-all such as `/*`) do not count for the paths `shadowed` picks: the file share's
   * catch-all never serves the service's own top-level names, so it must not add its methods to their `Allow`.
   */
  shadow(url: string, shadowed: (path: string) => boolean): void;
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
  const shadows = new Map<string, (path: string) => boolean>();
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
    allowed(path) {
      return [...methods]
        .filter((method) => {
          const found = router.find(method as never, path);
          if (found === null) return false;
          const shadowed = shadows.get((found.store as { url: string }).url);
          return !shadowed?.(path);
        })
        .sort();
    },
    shadow(url, shadowed) {
      shadows.set(url, shadowed);
    },
  };
}
