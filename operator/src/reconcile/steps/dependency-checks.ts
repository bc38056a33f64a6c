// Before a rollout, what the service depends on must be there: the Secrets the spec references, a database the
// URL reaches where the schema can be created, and a bucket (created when the spec allows). A failure is a
// CheckFailure whose reason becomes the Stalled condition's. What the checks create is recorded in the status.
import { CheckFailure } from '../../checks/check-failure.ts';
import { hasStorage, type ServiceResource, type ServiceStatus } from '../../crds/types.ts';
import type { SecretSources } from '../../desired/common.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import { accessKeyDigest, recordBucket, recordSchema } from '../created-data.ts';
import { databaseIdentity, endpointIdentity } from '../deletion-guard.ts';
import { hashOf } from '../drift.ts';
import { externalDataStores, storageTarget, type DataStores } from './data-stores.ts';
import { secretMeta, secretValue, type SecretReader } from './secret-reads.ts';
import type { EventSink } from './step-inputs.ts';

export interface DependencyCheckInput extends SecretReader {
  kind: KindInfo;
  events: EventSink;
  dataStores?: DataStores;
}

/** Per resource key, the fingerprint (database/storage spec + Secret versions) that last passed the checks. */
export type PassedChecks = Map<string, string>;

/** Fails with SecretNotFound, naming the field and the key to create, when a referenced Secret does not exist. */
export async function requireReferencedSecrets(reader: SecretReader, resource: ServiceResource, sources: SecretSources): Promise<void> {
  const ns = resource.metadata.namespace!;
  const refs: [string, string, string][] = [[sources.database.name, 'spec.database.secretRef', sources.database.key]];
  if (sources.storage)
    refs.push([sources.storage.name, 'spec.storage.credentialsSecretRef', `${sources.storage.accessKey}" and "${sources.storage.secretKey}`]);
  if (!sources.session.generated) refs.push([sources.session.name, 'spec.auth.sessionSecretRef', sources.session.key]);
  if (!sources.admin.generated) refs.push([sources.admin.name, 'spec.auth.adminPasswordSecretRef', sources.admin.key]);
  for (const [name, field, keys] of refs) {
    if (!(await secretMeta(reader, ns, name))) {
      throw new CheckFailure('SecretNotFound', `Secret "${name}" (${field}) does not exist in namespace "${ns}": create it with the key "${keys}"`);
    }
  }
}

/** Database and bucket checks, skipped while nothing they depend on has changed since they last passed. */
export async function checkDataStores(
  input: DependencyCheckInput,
  key: string,
  resource: ServiceResource,
  sources: SecretSources,
  passed: PassedChecks,
): Promise<void> {
  const { client, events } = input;
  const stores = input.dataStores ?? externalDataStores;
  const ns = resource.metadata.namespace!;
  const versions = await Promise.all(
    [sources.database.name, sources.storage?.name].map(async (n) => (n ? (await secretMeta(input, ns, n))?.metadata.resourceVersion : undefined)),
  );
  const fingerprint = hashOf([resource.metadata.uid, resource.spec.database, hasStorage(resource.spec) ? resource.spec.storage : null, versions]);
  if (passed.get(key) === fingerprint) return;
  const url = await secretValue(client, ns, sources.database.name, sources.database.key, 'spec.database.secretRef');
  const schema = resource.spec.database.schema;
  const { created: schemaCreated } = await stores.checkDatabase(url, schema, `Secret "${sources.database.name}" key "${sources.database.key}"`);
  const database = databaseIdentity(url, ns);
  if (schemaCreated && database) {
    await recordCreated(input, resource, recordSchema(resource.status, { database, schema }));
    await events.record(resource, 'Normal', 'SchemaCreated', `Created the schema "${schema}" in ${database}`);
  }
  const storage = await storageTarget(client, input.kind, resource, sources);
  if (storage && hasStorage(resource.spec)) {
    const { created } = await stores.checkBucket(storage.target, resource.spec.storage.createBucket, storage.where);
    if (created) {
      const endpoint = endpointIdentity(storage.target.endpoint, ns);
      await recordCreated(
        input,
        resource,
        recordBucket(resource.status, { endpoint, bucket: storage.target.bucket, accessKeyDigest: accessKeyDigest(storage.target.accessKey) }),
      );
      await events.record(resource, 'Normal', 'BucketCreated', `Created bucket "${storage.target.bucket}" at ${storage.target.endpoint}`);
    }
  }
  passed.set(key, fingerprint);
}

/**
 * Writes what was just created into the status at once: with deletionPolicy Delete it goes too, even if this
 * reconcile fails later. A record lost to a failed write errs on the side of keeping the data.
 */
async function recordCreated(input: Pick<DependencyCheckInput, 'client' | 'kind'>, resource: ServiceResource, fields: Partial<ServiceStatus>): Promise<void> {
  await input.client.mergePatch(input.kind.resource, resource.metadata.namespace, resource.metadata.name, { status: fields }, 'status');
  resource.status = { ...(resource.status ?? {}), ...fields };
}
