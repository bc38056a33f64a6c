import { describe, expect, it } from 'vitest';
import type { ServiceStatus } from '../crds/types.ts';
import { MAX_RECORDS, accessKeyDigest, createdAtLocation, createdElsewhere, recordBucket, recordSchema } from './created-data.ts';
import type { DataLocation } from './deletion-guard.ts';

const here: DataLocation = {
  database: 'postgres.apps:5432/boxyard',
  schema: 'file_share',
  storage: { endpoint: 'minio.storage:9000', bucket: 'files', prefix: 'a' },
};
const status = (): ServiceStatus => ({
  ...recordSchema(undefined, { database: 'postgres.apps:5432/boxyard', schema: 'file_share' }),
  ...recordBucket(undefined, { endpoint: 'minio.storage:9000', bucket: 'files', accessKeyDigest: accessKeyDigest('key-1') }),
});

describe('what the operator created for a resource', () => {
  it('counts a schema or bucket as created only at the recorded place, with the recorded access key', () => {
    expect(createdAtLocation(status(), here, 'key-1')).toEqual({ schema: true, bucket: true });
    expect(createdAtLocation(status(), { ...here, database: 'postgres.apps:5432/other' }, 'key-1').schema).toBe(false);
    expect(createdAtLocation(status(), { ...here, storage: { ...here.storage!, endpoint: 'minio-b.storage:9000' } }, 'key-1').bucket).toBe(false);
    expect(createdAtLocation(status(), here, 'key-2').bucket).toBe(false);
    // Earlier versions wrote only `bucketCreated: true`, which does not say where: not enough to remove anything.
    expect(createdAtLocation({ storage: { bucketCreated: true } }, here, 'key-1')).toEqual({ schema: false, bucket: false });
  });

  it('names what was created where the spec no longer points', () => {
    expect(createdElsewhere(status(), here)).toEqual([]);
    expect(createdElsewhere(status(), { ...here, database: 'pg-b.apps:5432/x', storage: { ...here.storage!, endpoint: 'minio-b.storage:9000' } })).toEqual([
      'the schema "file_share" in postgres.apps:5432/boxyard',
      'the bucket "files" at minio.storage:9000',
    ]);
  });

  it('keeps each record once and at most MAX_RECORDS of them', () => {
    let s: ServiceStatus = status();
    s = { ...s, ...recordSchema(s, { database: 'postgres.apps:5432/boxyard', schema: 'file_share' }) };
    expect(s.database?.createdSchemas).toHaveLength(1);
    for (let i = 0; i < MAX_RECORDS + 3; i++) s = { ...s, ...recordSchema(s, { database: `db${i}`, schema: 's' }) };
    expect(s.database?.createdSchemas).toHaveLength(MAX_RECORDS);
    expect(s.database?.createdSchemas?.at(-1)).toEqual({ database: `db${MAX_RECORDS + 2}`, schema: 's' });
    expect(s.storage?.createdBuckets).toHaveLength(1); // the other record is untouched
  });
});
