// On deletion, the finalizer's work. deletionPolicy Delete: refuse when the data is not this resource's alone,
// else stop the Deployment, drop the schema and delete the stored objects (and the schema or bucket only if the
// operator created them there). Retain: keep the data, and release the generated Secrets so a re-created resource
// of the same name adopts them. Then the finalizer goes and the apiserver deletes the resource.
import { CheckFailure } from '../../checks/check-failure.ts';
import type { ServiceResource } from '../../crds/types.ts';
import { childName, secretSources, type SecretSources } from '../../desired/common.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { createdAtLocation, createdElsewhere } from '../created-data.ts';
import { deletionRefusal, locationOf } from '../deletion-guard.ts';
import { externalDataStores, storageTarget, type DataStores } from './data-stores.ts';
import { FINALIZER, removeFinalizer } from './finalizer.ts';
import { secretMeta, secretValue, type SecretReader } from './secret-reads.ts';
import type { EventSink } from './step-inputs.ts';
import { ignoreError } from '@boxyard/kit';

export interface FinalizeInput extends SecretReader {
  kind: KindInfo;
  events: EventSink;
  /** Every resource of every kind the operator watches (whose data may be shared). */
  peers: () => ServiceResource[];
  dataStores?: DataStores;
}

/** Runs the finalizer's work and removes it; false when the finalizer was not there (nothing to do). */
export async function finalize(input: FinalizeInput, resource: ServiceResource): Promise<boolean> {
  if (!(resource.metadata.finalizers ?? []).includes(FINALIZER)) return false;
  const sources = secretSources(input.kind, resource);
  if (resource.spec.deletionPolicy === 'Delete') await deleteData(input, resource, sources);
  else await retainData(input, resource, sources);
  await removeFinalizer(input.client, input.kind, resource);
  return true;
}

/** deletionPolicy Delete: removes what the resource owns alone, or fails with DeletionRefused having removed nothing. */
async function deleteData(input: FinalizeInput, resource: ServiceResource, sources: SecretSources): Promise<void> {
  const { client } = input;
  const stores = input.dataStores ?? externalDataStores;
  const ns = resource.metadata.namespace!;
  const url = await secretValue(client, ns, sources.database.name, sources.database.key, 'spec.database.secretRef').catch((error: unknown) => {
    throw error instanceof CheckFailure
      ? new CheckFailure(error.reason, `${error.message}; or set spec.deletionPolicy: Retain to finish the deletion and keep the data`)
      : error;
  });
  const storage = await storageTarget(client, input.kind, resource, sources);
  const location = locationOf(resource, url);
  const created = createdAtLocation(resource.status, location, storage?.target.accessKey);
  // Checked before anything goes, the Deployment included: a refused deletion leaves everything as it was.
  await refuseSharedData(input, resource, url, created.bucket);
  // Stop the writers first, so nothing writes into data being deleted.
  await client.delete(resources.deployment, ns, childName(input.kind, resource.metadata.name));
  const schema = resource.spec.database.schema;
  let detail: string;
  if (created.schema) {
    await stores.dropSchema(url, schema, `Secret "${sources.database.name}" key "${sources.database.key}"`);
    detail = `Dropped the schema "${schema}"`;
  } else {
    detail = `Kept the schema "${schema}" in ${location.database ?? 'the database'}: it existed before this resource (the operator did not create it)`;
  }
  if (storage) {
    const count = await stores.deleteObjects(storage.target, storage.where);
    detail += `; deleted ${count} objects${storage.target.prefix ? ` under "${storage.target.prefix}/"` : ''} in bucket "${storage.target.bucket}"`;
    if (created.bucket) {
      await stores.deleteBucket(storage.target, storage.where);
      detail += ' and the bucket';
    } else {
      detail += `; kept the bucket "${storage.target.bucket}" at ${storage.target.endpoint}: it existed before this resource, or was created with other credentials`;
    }
  }
  const elsewhere = createdElsewhere(resource.status, location);
  if (elsewhere.length) detail += `; left what it created where the spec no longer points: ${elsewhere.join(', ')}`;
  await input.events.record(resource, 'Normal', 'DataDeleted', `${detail} (deletionPolicy Delete)`);
}

/** Fails with DeletionRefused when the schema or the stored objects are not this resource's alone. */
async function refuseSharedData(input: FinalizeInput, resource: ServiceResource, url: string, bucketCreated: boolean): Promise<void> {
  const peers = await Promise.all(
    input
      .peers()
      .filter((peer) => peer.metadata.uid !== resource.metadata.uid)
      .map(async (peer) => {
        // Only a peer with a schema of the same name needs its database URL read.
        const sameSchema = peer.spec.database.schema === resource.spec.database.schema;
        const ref = peer.spec.database.secretRef;
        const peerUrl = sameSchema
          ? await secretValue(input.client, peer.metadata.namespace!, ref.name, ref.key ?? 'url', 'spec.database.secretRef').catch(
              ignoreError('a peer whose secret cannot be read is compared by its schema alone'),
            )
          : undefined;
        return { resource: peer, location: locationOf(peer, peerUrl) };
      }),
  );
  const refusal = deletionRefusal({ resource, location: locationOf(resource, url), bucketCreated }, peers);
  if (refusal) {
    throw new CheckFailure(
      'DeletionRefused',
      `deletionPolicy Delete refused: ${refusal}. Nothing was deleted; set spec.deletionPolicy: Retain to finish the deletion and keep the data`,
    );
  }
}

/** deletionPolicy Retain: the generated Secrets outlive the resource, so a new one of the same name signs in the same way. */
async function retainData(input: FinalizeInput, resource: ServiceResource, sources: SecretSources): Promise<void> {
  const ns = resource.metadata.namespace!;
  for (const generated of [sources.session, sources.admin].filter((s) => s.generated)) {
    const live = await secretMeta(input, ns, generated.name);
    const refs = live?.metadata.ownerReferences ?? [];
    if (!live || !refs.some((ref) => ref.uid === resource.metadata.uid)) continue;
    await input.client.mergePatch(resources.secret, ns, generated.name, {
      metadata: { ownerReferences: refs.filter((ref) => ref.uid !== resource.metadata.uid), resourceVersion: live.metadata.resourceVersion },
    });
  }
  await input.events.record(
    resource,
    'Normal',
    'DataRetained',
    'Kept the database schema, the stored objects and the generated Secrets (deletionPolicy Retain)',
  );
}
