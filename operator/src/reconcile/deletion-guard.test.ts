import { describe, expect, it } from 'vitest';
import type { ServiceResource } from '../crds/types.ts';
import { databaseIdentity, deletionRefusal, locationOf, prefixesOverlap } from './deletion-guard.ts';

const DB = 'postgres://u:p@postgres.apps.svc:5432/boxyard';
let uid = 0;
function share(namespace: string, spec: { schema?: string; bucket?: string; prefix?: string; endpoint?: string } = {}, kind = 'FileShare'): ServiceResource {
  return {
    apiVersion: 'boxyard.io/v1alpha1',
    kind,
    metadata: { name: `r${++uid}`, namespace, uid: `uid-${uid}` },
    spec: {
      database: { secretRef: { name: 'db' }, schema: spec.schema ?? 'file_share' },
      ...(kind === 'TerminalPool'
        ? {}
        : { storage: { endpoint: spec.endpoint ?? 'http://minio.storage.svc:9000', bucket: spec.bucket ?? 'files', prefix: spec.prefix ?? 'team-a' } }),
    },
  } as unknown as ServiceResource;
}
const refusal = (self: ServiceResource, peers: [ServiceResource, string | undefined][], url = DB, bucketCreated = false) =>
  deletionRefusal(
    { resource: self, location: locationOf(self, url), bucketCreated },
    peers.map(([r, u]) => ({ resource: r, location: locationOf(r, u) })),
  );

describe('what deletionPolicy Delete may remove', () => {
  it('identifies a database by host, port and name, whatever the Service name form', () => {
    expect(databaseIdentity('postgres://u:p@postgres:5432/boxyard', 'apps')).toBe('postgres.apps:5432/boxyard');
    expect(databaseIdentity('postgresql://u:p@Postgres.apps.svc.cluster.local/boxyard', 'other')).toBe('postgres.apps:5432/boxyard');
    expect(databaseIdentity('postgres://alice@10.0.0.5', 'apps')).toBe('10.0.0.5:5432/alice');
    expect(databaseIdentity('not a url', 'apps')).toBeUndefined();
  });

  it('treats prefixes as overlapping when one lies under the other or either is the whole bucket', () => {
    expect(prefixesOverlap('team-a', 'team-a/')).toBe(true);
    expect(prefixesOverlap('team', 'team/sub')).toBe(true);
    expect(prefixesOverlap('team', 'team-a')).toBe(false);
    expect(prefixesOverlap('', 'x')).toBe(true);
  });

  it('allows a resource whose schema and prefix are its own', () => {
    expect(
      refusal(share('apps'), [
        [share('apps', { schema: 'other', prefix: 'team-b' }), DB],
        [share('apps', { prefix: 'team-c' }), 'postgres://u:p@elsewhere:5432/boxyard'],
      ]),
    ).toBeUndefined();
    expect(refusal(share('apps'), [[share('apps', { schema: 'other', prefix: 'team-a', bucket: 'other-bucket' }), DB]])).toBeUndefined();
  });

  it("refuses the public schema, PostgreSQL's own, and an empty prefix in a bucket the operator did not create", () => {
    expect(refusal(share('apps', { schema: 'public' }), [])).toMatch(/the schema "public" is not the service's own/);
    expect(refusal(share('apps', { schema: 'pg_catalog' }), [])).toMatch(/pg_catalog/);
    expect(refusal(share('apps', { prefix: '' }), [])).toMatch(/prefix is empty, so the data is the whole bucket "files", which the operator did not create/);
    expect(refusal(share('apps', { prefix: '' }), [], DB, true)).toBeUndefined();
  });

  it('refuses a schema another resource of any kind uses in the same database, in any namespace', () => {
    const pool = share('team-b', { schema: 'file_share' }, 'TerminalPool');
    expect(refusal(share('apps'), [[pool, 'postgres://x:y@postgres.apps:5432/boxyard']])).toMatch(
      /^TerminalPool team-b\/r\d+ uses the same schema "file_share" in the same database$/,
    );
    // Same schema name, its URL unreadable: it may be the same database.
    expect(refusal(share('apps'), [[share('team-c', { prefix: 'c' }), undefined]])).toMatch(/its database URL cannot be read/);
  });

  it("refuses a prefix that overlaps another resource's in the same bucket, and the whole bucket when another uses it", () => {
    expect(refusal(share('apps', { schema: 'a' }), [[share('apps', { schema: 'b', prefix: 'team-a/sub' }), DB]])).toMatch(
      /stores objects in bucket "files" under "team-a\/sub\/", which overlaps "team-a\/"/,
    );
    expect(
      refusal(
        share('apps', { schema: 'a', prefix: '' }),
        [[share('other', { schema: 'b', prefix: 'x', endpoint: 'http://minio.storage:9000' }), DB]],
        DB,
        true,
      ),
    ).toMatch(/overlaps the whole bucket/);
  });
});
