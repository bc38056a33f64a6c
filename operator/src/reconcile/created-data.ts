// What the operator created outside the cluster for a resource, and where: the status records each schema (with
// its database) and each bucket (with its endpoint and the access key it was made with) at the moment it is
// created. deletionPolicy Delete drops a schema or removes a bucket only when the spec still points at exactly
// such a record; whatever existed before (adopted), or lies where the spec no longer points, stays.
import { createHash } from 'node:crypto';
import type { CreatedBucket, CreatedSchema, ServiceStatus } from '../crds/types.ts';
import type { DataLocation } from './deletion-guard.ts';

/** The CRD's maxItems: older records fall off (kept data, never deleted data). */
export const MAX_RECORDS = 16;

/** Enough to tell two access keys apart without writing the key id into the status. */
export const accessKeyDigest = (accessKey: string): string => createHash('sha256').update(accessKey).digest('hex').slice(0, 16);

function withRecord<T extends object>(list: T[] | undefined, entry: T): T[] {
  const same = (a: T) => JSON.stringify(a) === JSON.stringify(entry);
  return [...(list ?? []).filter((a) => !same(a)), entry].slice(-MAX_RECORDS);
}

export function recordSchema(status: ServiceStatus | undefined, entry: CreatedSchema): Pick<ServiceStatus, 'database'> {
  return { database: { ...(status?.database ?? {}), createdSchemas: withRecord(status?.database?.createdSchemas, entry) } };
}

export function recordBucket(status: ServiceStatus | undefined, entry: CreatedBucket): Pick<ServiceStatus, 'storage'> {
  return { storage: { ...(status?.storage ?? {}), createdBuckets: withRecord(status?.storage?.createdBuckets, entry) } };
}

/** Whether the schema and the bucket the spec points at now are ones the operator created for this resource. */
export function createdAtLocation(status: ServiceStatus | undefined, location: DataLocation, accessKey?: string): { schema: boolean; bucket: boolean } {
  const schema = !!location.database && !!status?.database?.createdSchemas?.some((s) => s.database === location.database && s.schema === location.schema);
  const storage = location.storage;
  const bucket =
    !!storage &&
    accessKey !== undefined &&
    !!status?.storage?.createdBuckets?.some(
      (b) => b.endpoint === storage.endpoint && b.bucket === storage.bucket && b.accessKeyDigest === accessKeyDigest(accessKey),
    );
  return { schema, bucket };
}

/** Records of data created elsewhere (the spec has moved on): left alone, named in the deletion event. */
export function createdElsewhere(status: ServiceStatus | undefined, location: DataLocation): string[] {
  const schemas = (status?.database?.createdSchemas ?? [])
    .filter((s) => !(s.database === location.database && s.schema === location.schema))
    .map((s) => `the schema "${s.schema}" in ${s.database}`);
  const buckets = (status?.storage?.createdBuckets ?? [])
    .filter((b) => !(location.storage && b.endpoint === location.storage.endpoint && b.bucket === location.storage.bucket))
    .map((b) => `the bucket "${b.bucket}" at ${b.endpoint}`);
  return [...schemas, ...buckets];
}
