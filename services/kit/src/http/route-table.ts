// The app's own list of routes (method + URL pattern), recorded as they are registered: the access matrices
// check every route against it, so a new route cannot slip in without a row saying who may call it.
import type { FastifyInstance, RouteOptions } from 'fastify';

export interface RouteEntry {
  method: string;
  url: string;
  /** A WebSocket route (@fastify/websocket's `websocket: true`). */
  websocket: boolean;
  /** The HEAD route fastify adds for every GET (same handler): it answers as the GET does, without a body. */
  headOfGet: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far (including the kit's operational ones), in registration order. */
    routeTable: readonly RouteEntry[];
  }
}

/** Installs the recorder; call it before any route is added. */
export function recordRouteTable(app: FastifyInstance): void {
  const table: RouteEntry[] = [];
  const getHandlers = new Map<string, unknown>();
  app.decorate('routeTable', table);
  app.addHook('onRoute', (route: RouteOptions & { websocket?: boolean }) => {
    for (const method of [route.method].flat()) {
      if (method === 'GET') getHandlers.set(route.url!, route.handler);
      table.push({
        method,
        url: route.url!,
        websocket: route.websocket === true,
        headOfGet: method === 'HEAD' && getHandlers.get(route.url!) === route.handler,
      });
    }
  });
}
