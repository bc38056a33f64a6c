// The access matrix of a service, checked against the service's own route table: every route (method + URL
// pattern, as the running app registered it) × every role, with the status each role must get. A route the app
// has but the table lacks fails, and so does a row whose route the app no longer has; each cell is a real request
// against the running service. Roles that do not exist yet stay in the matrix as "not implemented", so the gap
// shows in the coverage figure instead of disappearing.
import { afterAll, describe, expect, it } from 'vitest';

export interface RoleSpec<R extends string> {
  name: R;
  /** Why this role cannot be exercised (the credential kind does not exist yet). */
  notImplemented?: string;
}

export interface MatrixRow<R extends string> {
  /** `METHOD /url/:pattern`, exactly as the app registered it. */
  route: string;
  /** What this case does, when one route has several (a catch-all route serving listings, downloads...). */
  name?: string;
  /** The status each implemented role must get. */
  expected: Partial<Record<R, number>>;
  /** Sends the request as `role` (with `method`: the row's, or HEAD for the HEAD fastify adds to a GET). */
  call(role: R, method: string): Promise<number>;
  /** For a GET row: what HEAD must answer per role when it differs from the GET (default: the same). */
  headExpected?: Partial<Record<R, number>>;
}

interface TableRoute {
  method: string;
  url: string;
  headOfGet: boolean;
}

export interface MatrixOptions<R extends string> {
  service: string;
  roles: RoleSpec<R>[];
  /** The running app's route table (the kit records it: app.routeTable). */
  routeTable: () => readonly TableRoute[];
  rows: () => MatrixRow<R>[];
}

const key = (method: string, url: string) => `${method} ${url}`;
const SAFE = new Set(['GET', 'HEAD']);

/** Registers the tests: one per row (all roles), one for the route table, and the coverage line at the end. */
export function describeAccessMatrix<R extends string>(options: MatrixOptions<R>): void {
  const implemented = options.roles.filter((role) => !role.notImplemented);
  const exercised = new Set<string>();

  describe(`access matrix of ${options.service}`, () => {
    it('has a row for every route of the app, and no row for a route it no longer has', () => {
      const rows = options.rows();
      const table = options.routeTable();
      const covered = new Set(rows.map((row) => row.route));
      for (const row of rows) {
        if (!row.route.startsWith('GET ')) continue;
        const head = table.find((route) => route.headOfGet && key(route.method, route.url) === `HEAD ${row.route.slice(4)}`);
        if (head) covered.add(key(head.method, head.url));
      }
      const registered = new Set(table.map((route) => key(route.method, route.url)));
      const missing = [...registered].filter((route) => !covered.has(route));
      const stale = [...covered].filter((route) => !registered.has(route));
      expect({ routesWithoutRow: missing, rowsWithoutRoute: stale }).toEqual({ routesWithoutRow: [], rowsWithoutRoute: [] });
      for (const row of rows) {
        const unlisted = implemented.filter((role) => row.expected[role.name] === undefined).map((role) => role.name);
        expect(unlisted, `${row.route} ${row.name ?? ''}: roles without an expected status`).toEqual([]);
      }
    });

    for (const row of options.rows()) {
      it(`${row.route}${row.name ? ` (${row.name})` : ''}`, async () => {
        const [method, url] = row.route.split(' ') as [string, string];
        const hasHead = method === 'GET' && options.routeTable().some((route) => route.headOfGet && route.url === url);
        const seen: Partial<Record<R, number>> = {};
        const seenHead: Partial<Record<R, number>> = {};
        const exercise = async (role: RoleSpec<R>) => {
          seen[role.name] = await row.call(role.name, method);
          exercised.add(`${row.route}|${role.name}`);
          if (hasHead) {
            seenHead[role.name] = await row.call(role.name, 'HEAD');
            exercised.add(`HEAD ${url}|${role.name}`);
          }
        };
        // Reads change nothing, so all roles go at once; a change goes one role after the other (its fixture
        // is made again after each success).
        if (SAFE.has(method)) await Promise.all(implemented.map(exercise));
        else for (const role of implemented) await exercise(role);
        expect(seen).toEqual(row.expected);
        if (hasHead) expect(seenHead, 'HEAD').toEqual({ ...row.expected, ...row.headExpected });
      });
    }

    afterAll(() => {
      const table = options.routeTable();
      if (table.length === 0) return;
      const total = table.length * options.roles.length;
      const missingRoles = options.roles.filter((role) => role.notImplemented);
      const cases = options.rows().length;
      const percent = ((100 * exercised.size) / total).toFixed(1);
      const gaps = missingRoles.map((role) => `${role.name}: ${role.notImplemented}`).join('; ');
      console.log(
        `[access matrix] ${options.service}: ${table.length} routes × ${options.roles.length} roles = ${total} cells, ` +
          `${exercised.size} exercised (${percent}%) in ${cases} cases${gaps ? `; not implemented: ${gaps}` : ''}`,
      );
    });
  });
}

/** Expected statuses: the roles named get theirs; the rest get `otherwise` (401 for those in `unauthenticated`). */
export function outcomes<R extends string>(
  roles: RoleSpec<R>[],
  unauthenticated: readonly R[],
  granted: Partial<Record<R, number>>,
  otherwise = 403,
): Partial<Record<R, number>> {
  const result: Partial<Record<R, number>> = {};
  for (const role of roles) {
    if (role.notImplemented) continue;
    result[role.name] = granted[role.name] ?? (unauthenticated.includes(role.name) ? 401 : otherwise);
  }
  return result;
}

/**
 * A fixture reused across roles until a call succeeds (a success may have changed or removed it): a refusal
 * leaves it as it was, so only the roles that pass cost a new one.
 */
export function reusable<T>(make: () => Promise<T>) {
  let current: Promise<T> | undefined;
  return async (use: (value: T) => Promise<number>): Promise<number> => {
    current ??= make();
    const status = await use(await current);
    if (status < 300) current = undefined;
    return status;
  };
}
