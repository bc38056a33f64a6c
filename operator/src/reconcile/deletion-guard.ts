// deletionPolicy: Delete removes only what the resource owns alone. Before anything is dropped, the guard refuses
// a schema PostgreSQL or other software owns (`public`, `pg_*`, `information_schema`), an empty bucket prefix in a
// bucket the operator did not create (the whole bucket), and a schema or prefix another resource of any kind, in
// any watched namespace, also uses. Refusing is the safe answer when it cannot tell (a peer's URL unreadable).
import type { ServiceResource } from '../crds/types.ts';
import { hasStorage } from '../crds/types.ts';
import { trimLeading, trimTrailing } from '@boxyard/kit/text/trim.ts';

const RESERVED_SCHEMAS = /^(public|information_schema|pg_.*)$/;

/** What a resource's data is: the database (an identity string, or undefined when unknown) and the storage. */
export interface DataLocation {
  /** `host:port/database`, normalized; undefined when the URL could not be read. */
  database: string | undefined;
  schema: string;
  storage?: { endpoint: string; bucket: string; prefix: string };
}

/** `postgres.team.svc.cluster.local` and `postgres` (in namespace team) are one host: `postgres.team`. */
export function normalizeHost(host: string, namespace: string): string {
  const h = host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/\.svc(\.cluster\.local)?$/, '');
  return h.includes('.') || h === 'localhost' || /^[\d:[\]]+$/.test(h) ? h : `${h}.${namespace}`;
}

/** `host:port/database` of a postgres:// URL (libpq's defaults: port 5432, database = user name). */
export function databaseIdentity(url: string, namespace: string): string | undefined {
  try {
    const u = new URL(url);
    const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username);
    return `${normalizeHost(u.hostname, namespace)}:${u.port || '5432'}/${database}`;
  } catch {
    return undefined;
  }
}

export function endpointIdentity(endpoint: string, namespace: string): string {
  try {
    const u = new URL(endpoint);
    return `${normalizeHost(u.hostname, namespace)}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  } catch {
    return endpoint;
  }
}

const trimPrefix = (prefix: string) => trimTrailing(trimLeading(prefix, '/'), '/');

/** Two prefixes overlap when one is the other or lies under it (`a` and `a/b`), or either is the whole bucket. */
export function prefixesOverlap(a: string, b: string): boolean {
  const [x, y] = [trimPrefix(a), trimPrefix(b)];
  return !x || !y || x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`);
}

export function locationOf(resource: ServiceResource, databaseUrl: string | undefined): DataLocation {
  const ns = resource.metadata.namespace ?? 'default';
  const { spec } = resource;
  return {
    database: databaseUrl === undefined ? undefined : databaseIdentity(databaseUrl, ns),
    schema: spec.database.schema,
    ...(hasStorage(spec)
      ? { storage: { endpoint: endpointIdentity(spec.storage.endpoint, ns), bucket: spec.storage.bucket, prefix: spec.storage.prefix ?? '' } }
      : {}),
  };
}

const describe = (r: ServiceResource) => `${r.kind} ${r.metadata.namespace}/${r.metadata.name}`;

/**
 * Why deleting `self`'s data must not happen, or undefined when it may. `peers` are the other resources with their
 * locations (the database undefined when their URL could not be read).
 */
export function deletionRefusal(
  self: { resource: ServiceResource; location: DataLocation; bucketCreated: boolean },
  peers: { resource: ServiceResource; location: DataLocation }[],
): string | undefined {
  const { location } = self;
  if (RESERVED_SCHEMAS.test(location.schema)) {
    return `the schema "${location.schema}" is not the service's own (PostgreSQL and other software keep objects there)`;
  }
  if (location.storage && !trimPrefix(location.storage.prefix) && !self.bucketCreated) {
    return `spec.storage.prefix is empty, so the data is the whole bucket "${location.storage.bucket}", which the operator did not create`;
  }
  for (const peer of peers) {
    if (peer.resource.metadata.uid === self.resource.metadata.uid) continue;
    const other = peer.location;
    if (other.schema === location.schema && (other.database === undefined || other.database === location.database)) {
      return other.database === undefined
        ? `${describe(peer.resource)} uses a schema of the same name ("${location.schema}") and its database URL cannot be read to tell whether it is the same database`
        : `${describe(peer.resource)} uses the same schema "${location.schema}" in the same database`;
    }
    const a = location.storage;
    const b = other.storage;
    if (a && b && a.endpoint === b.endpoint && a.bucket === b.bucket && prefixesOverlap(a.prefix, b.prefix)) {
      return `${describe(peer.resource)} stores objects in bucket "${b.bucket}" under ${b.prefix ? `"${b.prefix}/"` : 'the whole bucket'}, which overlaps ${a.prefix ? `"${a.prefix}/"` : 'the whole bucket'}`;
    }
  }
  return undefined;
}
