// The data outside the cluster: the PostgreSQL schema and the object-storage bucket a resource uses. The steps
// reach them through DataStores, the real checks by default; unit tests on a fake client pass stand-ins.
import { checkDatabase, dropSchema } from '../../checks/postgres.ts';
import { checkBucket, deleteBucket, deleteObjects, type StorageTarget } from '../../checks/storage.ts';
import { hasStorage, type ServiceResource } from '../../crds/types.ts';
import type { SecretSources } from '../../desired/common.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import { secretValue } from './secret-reads.ts';
import type { ReconcileClient } from './step-inputs.ts';

export interface DataStores {
  checkDatabase: typeof checkDatabase;
  checkBucket: typeof checkBucket;
  dropSchema: typeof dropSchema;
  deleteObjects: typeof deleteObjects;
  deleteBucket: typeof deleteBucket;
}

/** The real PostgreSQL and S3 calls. */
export const externalDataStores: DataStores = { checkDatabase, checkBucket, dropSchema, deleteObjects, deleteBucket };

/** The bucket of a resource with the credentials from its Secret; undefined for a kind without storage. */
export async function storageTarget(
  client: ReconcileClient,
  kind: KindInfo,
  resource: ServiceResource,
  sources: SecretSources,
): Promise<{ target: StorageTarget; where: string } | undefined> {
  const { spec } = resource;
  if (!kind.storage || !hasStorage(spec) || !sources.storage) return undefined;
  const ns = resource.metadata.namespace!;
  const field = 'spec.storage.credentialsSecretRef';
  const [accessKey, secretKey] = await Promise.all([
    secretValue(client, ns, sources.storage.name, sources.storage.accessKey, field),
    secretValue(client, ns, sources.storage.name, sources.storage.secretKey, field),
  ]);
  return {
    target: { endpoint: spec.storage.endpoint, accessKey, secretKey, bucket: spec.storage.bucket, region: spec.storage.region, prefix: spec.storage.prefix },
    where: `Secret "${sources.storage.name}"`,
  };
}
