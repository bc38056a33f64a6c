// The reconciler shared by the three kinds: checks what the service depends on, creates the Secrets it generates,
// applies the desired children with server-side apply, deletes children no longer desired, and reports status.
// On deletion its finalizer removes (deletionPolicy Delete) or keeps (Retain) the data outside the cluster.
import { CheckFailure } from '../checks/check-failure.ts';
import { checkDatabase, dropSchema } from '../checks/postgres.ts';
import { checkBucket, deleteBucket, deleteObjects, type StorageTarget } from '../checks/storage.ts';
import { hasStorage, type ServiceResource, type ServiceStatus, type TerminalPoolSpec } from '../crds/types.ts';
import { MANAGED_BY, childName, ownerReference, secretSources, type SecretSources } from '../desired/common.ts';
import { desiredState, ownedTypes, type DesiredState } from '../desired/index.ts';
import type { KindInfo } from '../desired/kinds.ts';
import { desiredGeneratedSecrets, generateValues } from '../desired/secrets.ts';
import { KubeApiError, isConflict, type KubeClient } from '../kube/client.ts';
import { resources, resourceTypeOf, type ResourceType } from '../kube/resources.ts';
import { splitKey, type KubeObject } from '../kube/types.ts';
import type { ReconcileResult } from '../runtime/controller.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Informer } from '../runtime/informer.ts';
import { conditionsFor, deploymentPhase, type DeploymentObject, type Phase } from './conditions.ts';
import { accessKeyDigest, createdAtLocation, createdElsewhere, recordBucket, recordSchema } from './created-data.ts';
import { databaseIdentity, deletionRefusal, endpointIdentity, locationOf } from './deletion-guard.ts';
import { hashOf, needsApply, withAppliedHash } from './drift.ts';
import type { ImagePolicy } from './image-policy.ts';
import type { TracingDefaults } from '../desired/tracing.ts';

export const FINALIZER = 'boxyard.io/cleanup';
/** Index of child informers: the uid of the controlling owner. */
export const OWNER_INDEX = 'owner';
/** Index of primary informers: `namespace/secret` for every Secret the resource references. */
export const SECRET_INDEX = 'secrets';

type SecretObject = KubeObject & { data?: Record<string, string> };

export interface ServiceReconcilerOptions {
  client: KubeClient;
  kind: KindInfo;
  primary: Informer<ServiceResource>;
  /** Informers of the owned child types, by plural. */
  children: Map<string, Informer>;
  /** Metadata-only informer of the Secrets in the watched namespaces. */
  secrets: Informer;
  events: EventRecorder;
  defaultImage: string;
  /** The operator's OTEL_* settings, passed to service pods of resources that set none. */
  tracing?: TracingDefaults;
  /** Images resources may name (the default image is always allowed). */
  imagePolicy: ImagePolicy;
  /** The ClusterRole the terminal gateway's RoleBinding refers to (the chart ships it). */
  gatewayClusterRole?: string;
  /** Every resource of every kind the operator watches (for deletionPolicy Delete: whose data is shared). */
  peers: () => ServiceResource[];
  serviceMonitorAvailable: () => Promise<boolean>;
  log: (message: string) => void;
}

/** The Secrets a resource references (for the SECRET_INDEX and for mapping Secret events to resources). */
export function referencedSecrets(resource: ServiceResource): string[] {
  const { spec } = resource;
  const ns = resource.metadata.namespace;
  const names = [spec.database?.secretRef?.name, spec.auth?.sessionSecretRef?.name, spec.auth?.adminPasswordSecretRef?.name];
  if (hasStorage(spec)) names.push(spec.storage.credentialsSecretRef?.name);
  return [...new Set(names.filter((n): n is string => !!n))].map((n) => `${ns}/${n}`);
}

export const controllerUid = (object: KubeObject): string[] => {
  const owner = object.metadata.ownerReferences?.find((ref) => ref.controller);
  return owner ? [owner.uid] : [];
};

function stableEqual(a: unknown, b: unknown): boolean {
  return hashOf(a ?? null) === hashOf(b ?? null);
}

export class ServiceReconciler {
  private readonly o: ServiceReconcilerOptions;
  /** Per resource, the fingerprint (spec of database/storage + Secret versions) that last passed the checks. */
  private readonly checked = new Map<string, string>();

  constructor(options: ServiceReconcilerOptions) {
    this.o = options;
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const { namespace, name } = splitKey(key);
    const cached = this.o.primary.get(namespace, name);
    if (!cached) {
      this.checked.delete(key);
      return {};
    }
    const resource = structuredClone(cached); // never mutate the cache
    try {
      if (resource.metadata.deletionTimestamp) return await this.finalize(key, resource);
      // Before anything else, the finalizer included: a refused image creates and changes nothing.
      this.requireAllowedImages(resource);
      await this.ensureFinalizer(resource);
      const sources = secretSources(this.o.kind, resource);
      await this.requireReferencedSecrets(resource, sources);
      await this.runChecks(key, resource, sources);
      const versions = await this.ensureGeneratedSecrets(resource, sources);
      const desired = desiredState({
        kind: this.o.kind,
        resource,
        defaultImage: this.o.defaultImage,
        tracing: this.o.tracing,
        gatewayClusterRole: this.o.gatewayClusterRole,
        serviceMonitorAvailable: await this.o.serviceMonitorAvailable(),
        secretDigest: hashOf(versions),
      });
      const deployment = await this.applyChildren(resource, desired);
      await this.prune(resource, desired);
      const phase = deploymentPhase(deployment);
      await this.writeStatus(resource, phase, this.statusFields(desired, deployment));
      return {};
    } catch (error) {
      const failure = toFailure(error);
      if (!failure) throw error;
      const phase: Phase = { state: 'stalled', reason: failure.reason, message: resource.metadata.deletionTimestamp ? `Deletion blocked: ${failure.message}` : failure.message };
      await this.writeStatus(resource, phase, {});
      return { stalled: true };
    }
  };

  onPaused = async (resource: ServiceResource): Promise<void> => {
    await this.writeStatus(structuredClone(resource), {
      state: 'paused',
      reason: 'Paused',
      message: 'Reconciliation is paused by the annotation boxyard.io/paused: "true"; remove it to resume',
    }, {});
  };

  private requireAllowedImages(resource: ServiceResource): void {
    const images: { field: string; image: string }[] = [];
    if (resource.spec.image) images.push({ field: 'spec.image', image: resource.spec.image });
    const sessionImage = this.o.kind.kind === 'TerminalPool' ? (resource.spec as TerminalPoolSpec).sessionPod?.image : undefined;
    if (sessionImage) images.push({ field: 'spec.sessionPod.image', image: sessionImage });
    this.o.imagePolicy.require(images);
  }

  private async ensureFinalizer(resource: ServiceResource): Promise<void> {
    const finalizers = resource.metadata.finalizers ?? [];
    if (finalizers.includes(FINALIZER)) return;
    // Merge patch with the resourceVersion: fails (409) rather than resurrect or clobber a changed object.
    const patched = await this.o.client.mergePatch<ServiceResource>(this.o.kind.resource, resource.metadata.namespace, resource.metadata.name, {
      metadata: { finalizers: [...finalizers, FINALIZER], resourceVersion: resource.metadata.resourceVersion },
    });
    resource.metadata = patched.metadata;
  }

  /** The metadata of a Secret: from the cache, or (the cache may lag a Secret created a moment ago) the API. */
  private async secretMeta(namespace: string, name: string): Promise<KubeObject | undefined> {
    return this.o.secrets.get(namespace, name) ?? (await this.o.client.get(resources.secret, namespace, name, { metadataOnly: true }));
  }

  private async requireReferencedSecrets(resource: ServiceResource, sources: SecretSources): Promise<void> {
    const ns = resource.metadata.namespace!;
    const refs: [string, string, string][] = [[sources.database.name, 'spec.database.secretRef', sources.database.key]];
    if (sources.storage) refs.push([sources.storage.name, 'spec.storage.credentialsSecretRef', `${sources.storage.accessKey}" and "${sources.storage.secretKey}`]);
    if (!sources.session.generated) refs.push([sources.session.name, 'spec.auth.sessionSecretRef', sources.session.key]);
    if (!sources.admin.generated) refs.push([sources.admin.name, 'spec.auth.adminPasswordSecretRef', sources.admin.key]);
    for (const [name, field, keys] of refs) {
      if (!(await this.secretMeta(ns, name))) {
        throw new CheckFailure('SecretNotFound', `Secret "${name}" (${field}) does not exist in namespace "${ns}": create it with the key "${keys}"`);
      }
    }
  }

  /** A value of a referenced Secret; fails with an actionable reason when the Secret or its key is missing. */
  private async secretValue(namespace: string, name: string, key: string, field: string): Promise<string> {
    const secret = await this.o.client.get<SecretObject>(resources.secret, namespace, name);
    if (!secret) throw new CheckFailure('SecretNotFound', `Secret "${name}" (${field}) does not exist in namespace "${namespace}": create it with the key "${key}"`);
    const value = secret.data?.[key];
    if (value === undefined) {
      const present = Object.keys(secret.data ?? {});
      throw new CheckFailure('SecretKeyMissing', `Secret "${name}" (${field}) has no key "${key}"${present.length ? ` (it has: ${present.join(', ')})` : ' (it is empty)'}: add the key, or name another one in ${field}.key`);
    }
    return Buffer.from(value, 'base64').toString('utf8').replace(/\r?\n$/, '');
  }

  private storageTarget = async (resource: ServiceResource, sources: SecretSources): Promise<{ target: StorageTarget; where: string } | undefined> => {
    const { spec } = resource;
    if (!this.o.kind.storage || !hasStorage(spec) || !sources.storage) return undefined;
    const ns = resource.metadata.namespace!;
    const field = 'spec.storage.credentialsSecretRef';
    const [accessKey, secretKey] = await Promise.all([
      this.secretValue(ns, sources.storage.name, sources.storage.accessKey, field),
      this.secretValue(ns, sources.storage.name, sources.storage.secretKey, field),
    ]);
    return {
      target: { endpoint: spec.storage.endpoint, accessKey, secretKey, bucket: spec.storage.bucket, region: spec.storage.region, prefix: spec.storage.prefix },
      where: `Secret "${sources.storage.name}"`,
    };
  };

  /** Database and bucket checks, skipped while nothing they depend on has changed since they last passed. */
  private async runChecks(key: string, resource: ServiceResource, sources: SecretSources): Promise<void> {
    const ns = resource.metadata.namespace!;
    const versions = await Promise.all([sources.database.name, sources.storage?.name].map(async (n) => (n ? (await this.secretMeta(ns, n))?.metadata.resourceVersion : undefined)));
    const fingerprint = hashOf([resource.metadata.uid, resource.spec.database, hasStorage(resource.spec) ? resource.spec.storage : null, versions]);
    if (this.checked.get(key) === fingerprint) return;
    const url = await this.secretValue(ns, sources.database.name, sources.database.key, 'spec.database.secretRef');
    const schema = resource.spec.database.schema;
    const { created: schemaCreated } = await checkDatabase(url, schema, `Secret "${sources.database.name}" key "${sources.database.key}"`);
    const database = databaseIdentity(url, ns);
    if (schemaCreated && database) {
      await this.recordCreated(resource, recordSchema(resource.status, { database, schema }));
      await this.o.events.record(resource, 'Normal', 'SchemaCreated', `Created the schema "${schema}" in ${database}`);
    }
    const storage = await this.storageTarget(resource, sources);
    if (storage && hasStorage(resource.spec)) {
      const { created } = await checkBucket(storage.target, resource.spec.storage.createBucket, storage.where);
      if (created) {
        const endpoint = endpointIdentity(storage.target.endpoint, ns);
        await this.recordCreated(resource, recordBucket(resource.status, { endpoint, bucket: storage.target.bucket, accessKeyDigest: accessKeyDigest(storage.target.accessKey) }));
        await this.o.events.record(resource, 'Normal', 'BucketCreated', `Created bucket "${storage.target.bucket}" at ${storage.target.endpoint}`);
      }
    }
    this.checked.set(key, fingerprint);
  }

  /**
   * Writes what was just created into the status at once: with deletionPolicy Delete it goes too, even if this
   * reconcile fails later. A record lost to a failed write errs on the side of keeping the data.
   */
  private async recordCreated(resource: ServiceResource, fields: Partial<ServiceStatus>): Promise<void> {
    await this.o.client.mergePatch(this.o.kind.resource, resource.metadata.namespace, resource.metadata.name, { status: fields }, 'status');
    resource.status = { ...(resource.status ?? {}), ...fields };
  }

  /** Creates the generated Secrets when absent (never overwrites them); returns the Secret versions the pods read. */
  private async ensureGeneratedSecrets(resource: ServiceResource, sources: SecretSources): Promise<Record<string, string | undefined>> {
    const ns = resource.metadata.namespace!;
    const uid = resource.metadata.uid!;
    const versions: Record<string, string | undefined> = {};
    for (const name of [sources.database.name, sources.storage?.name, sources.session.name, sources.admin.name]) {
      if (name) versions[name] = (await this.secretMeta(ns, name))?.metadata.resourceVersion;
    }
    const wanted = desiredGeneratedSecrets(this.o.kind, resource, sources, generateValues());
    const generated: string[] = [];
    for (const secret of wanted) {
      const name = secret.metadata.name;
      let live = await this.secretMeta(ns, name);
      if (!live) {
        try {
          live = await this.o.client.create(secret);
          versions[name] = live.metadata.resourceVersion;
          generated.push(name);
          continue;
        } catch (error) {
          if (!isConflict(error)) throw error;
          live = await this.o.client.get(resources.secret, ns, name, { metadataOnly: true });
          if (!live) throw error;
        }
      }
      const refs = live.metadata.ownerReferences ?? [];
      const controller = refs.find((ref) => ref.controller);
      if (controller && controller.uid !== uid && !this.isPredecessor(resource, controller)) {
        throw new CheckFailure('ChildConflict', `Secret "${name}" belongs to ${controller.kind} "${controller.name}": delete it, or rename this resource`);
      }
      if (controller && controller.uid !== uid) {
        live = await this.o.client.mergePatch(resources.secret, ns, name, {
          metadata: { ownerReferences: [...refs.filter((ref) => ref !== controller), ownerReference(resource)], resourceVersion: live.metadata.resourceVersion },
        });
      } else if (!controller) {
        if (live.metadata.labels?.['app.kubernetes.io/managed-by'] !== MANAGED_BY) {
          throw new CheckFailure('ChildConflict', `Secret "${name}" exists and was not generated by the operator: delete it, or reference it in spec.auth`);
        }
        // Kept from an earlier resource of the same name (deletionPolicy Retain): adopt it, values unchanged.
        live = await this.o.client.mergePatch(resources.secret, ns, name, {
          metadata: { ownerReferences: [...(live.metadata.ownerReferences ?? []), ownerReference(resource)], resourceVersion: live.metadata.resourceVersion },
        });
        await this.o.events.record(resource, 'Normal', 'Adopted', `Adopted the retained Secret ${name}`);
      }
      versions[name] = live.metadata.resourceVersion;
    }
    if (generated.length) await this.o.events.record(resource, 'Normal', 'Generated', `Generated the Secret${generated.length > 1 ? 's' : ''} ${generated.join(', ')} (never overwritten)`);
    return versions;
  }

  /**
   * An earlier resource of the same kind and name owned it: that owner is gone (names are unique), and the garbage
   * collector has not removed the child yet. Taking it over is what a re-created resource needs.
   */
  private isPredecessor(resource: ServiceResource, owner: { kind: string; name: string; uid: string } | undefined): boolean {
    return !!owner && owner.kind === resource.kind && owner.name === resource.metadata.name && owner.uid !== resource.metadata.uid;
  }

  private async live(type: ResourceType, namespace: string, name: string): Promise<KubeObject | undefined> {
    const informer = this.o.children.get(type.plural);
    return informer ? informer.get(namespace, name) : await this.o.client.get(type, namespace, name);
  }

  /** Applies every child that is missing or differs; returns the Deployment as it now stands. */
  private async applyChildren(resource: ServiceResource, desired: DesiredState): Promise<DeploymentObject | undefined> {
    const ns = resource.metadata.namespace!;
    const uid = resource.metadata.uid!;
    let deployment: DeploymentObject | undefined;
    // One event per kind of change, not one per child: a thousand resources must not mean ten thousand events.
    const created: string[] = [];
    const updated: string[] = [];
    for (const object of desired.objects) {
      const type = resourceTypeOf(object);
      const live = await this.live(type, ns, object.metadata.name);
      const owner = live?.metadata.ownerReferences?.find((ref) => ref.controller);
      if (live && owner?.uid !== uid && !this.isPredecessor(resource, owner)) {
        throw new CheckFailure(
          'ChildConflict',
          owner
            ? `${type.kind} "${object.metadata.name}" belongs to ${owner.kind} "${owner.name}" (uid ${owner.uid}); it is deleted with its owner, then this resource takes the name`
            : `${type.kind} "${object.metadata.name}" exists and is not managed by the operator: delete or rename it`,
        );
      }
      const wanted = withAppliedHash(object);
      let current = live;
      if (needsApply(wanted, live)) {
        try {
          current = await this.o.client.apply(wanted);
        } catch (error) {
          if (error instanceof KubeApiError && (error.status === 400 || error.status === 422)) {
            throw new CheckFailure('InvalidSpec', `the apiserver refused ${type.kind} "${object.metadata.name}": ${error.body?.message ?? error.message}. Fix the spec`);
          }
          if (error instanceof KubeApiError && error.status === 403) {
            throw new CheckFailure('Forbidden', `the operator may not write ${type.kind} "${object.metadata.name}": ${error.body?.message ?? error.message}. Check the operator's RBAC (charts/boxyard)`);
          }
          throw error;
        }
        (live ? updated : created).push(`${type.kind} ${object.metadata.name}`);
      }
      if (type === resources.deployment) deployment = current as DeploymentObject;
    }
    if (created.length) await this.o.events.record(resource, 'Normal', 'Created', `Created ${created.join(', ')}`);
    if (updated.length) await this.o.events.record(resource, 'Normal', 'Updated', `Updated ${updated.join(', ')}`);
    return deployment;
  }

  /** Deletes children that are no longer desired (Ingress removed from the spec, PDB when scaled to one, ...). */
  private async prune(resource: ServiceResource, desired: DesiredState): Promise<void> {
    const ns = resource.metadata.namespace!;
    const uid = resource.metadata.uid!;
    const keep = new Set(desired.objects.map((o) => `${o.kind}/${o.metadata.name}`));
    for (const type of ownedTypes(this.o.kind)) {
      const informer = this.o.children.get(type.plural);
      for (const child of informer?.byIndex(OWNER_INDEX, uid) ?? []) {
        if (keep.has(`${type.kind}/${child.metadata.name}`)) continue;
        if (await this.o.client.delete(type, ns, child.metadata.name, { uid: child.metadata.uid })) {
          await this.o.events.record(resource, 'Normal', 'Deleted', `Deleted ${type.kind} ${child.metadata.name} (no longer in the spec)`);
        }
      }
    }
    // ServiceMonitors are not cached (their CRD may not exist): looked up by name.
    const monitorName = childName(this.o.kind, resource.metadata.name);
    if (!keep.has(`ServiceMonitor/${monitorName}`) && (await this.o.serviceMonitorAvailable())) {
      const live = await this.o.client.get(resources.serviceMonitor, ns, monitorName);
      if (live && controllerUid(live)[0] === uid) await this.o.client.delete(resources.serviceMonitor, ns, monitorName, { uid: live.metadata.uid });
    }
  }

  private statusFields(desired: DesiredState, deployment: DeploymentObject | undefined): Partial<ServiceStatus> {
    return {
      url: desired.url,
      replicas: deployment?.status?.replicas ?? 0,
      readyReplicas: deployment?.status?.readyReplicas ?? 0,
      updatedReplicas: deployment?.status?.updatedReplicas ?? 0,
      selector: desired.selector,
      image: desired.image,
      sessionSecretName: desired.sources.session.name,
      adminSecretName: desired.sources.admin.name,
    };
  }

  /** Writes the status when it changed (never otherwise: the steady state issues no writes); events on transitions. */
  private async writeStatus(resource: ServiceResource, phase: Phase, fields: Partial<ServiceStatus>): Promise<void> {
    const previous = resource.status ?? {};
    // Paused: nothing of the current generation was acted on, so the status must not claim to have observed it.
    const generation = phase.state === 'paused' ? (previous.observedGeneration ?? 0) : (resource.metadata.generation ?? 0);
    const next: ServiceStatus = { ...previous, ...fields, observedGeneration: generation, conditions: conditionsFor(phase, generation, previous.conditions) };
    if (stableEqual(next, previous)) return;
    try {
      await this.o.client.mergePatch(this.o.kind.resource, resource.metadata.namespace, resource.metadata.name, { status: next }, 'status');
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return; // deleted meanwhile
      throw error;
    }
    const was = (type: string) => previous.conditions?.find((c) => c.type === type);
    if (phase.state === 'ready' && was('Ready')?.status !== 'True') {
      await this.o.events.record(resource, 'Normal', 'Ready', `${this.o.kind.kind} is ready at ${next.url ?? ''}`);
    }
    if (phase.state === 'stalled' && (was('Stalled')?.status !== 'True' || was('Stalled')?.message !== phase.message)) {
      await this.o.events.record(resource, 'Warning', phase.reason, phase.message);
    }
  }

  /** Fails with DeletionRefused when the schema or the stored objects are not this resource's alone. */
  private async refuseSharedData(resource: ServiceResource, url: string, bucketCreated: boolean): Promise<void> {
    const peers = await Promise.all(
      this.o.peers()
        .filter((peer) => peer.metadata.uid !== resource.metadata.uid)
        .map(async (peer) => {
          // Only a peer with a schema of the same name needs its database URL read.
          const sameSchema = peer.spec.database.schema === resource.spec.database.schema;
          const ref = peer.spec.database.secretRef;
          const peerUrl = sameSchema
            ? await this.secretValue(peer.metadata.namespace!, ref.name, ref.key ?? 'url', 'spec.database.secretRef').catch(() => undefined)
            : undefined;
          return { resource: peer, location: locationOf(peer, peerUrl) };
        }),
    );
    const refusal = deletionRefusal({ resource, location: locationOf(resource, url), bucketCreated }, peers);
    if (refusal) {
      throw new CheckFailure('DeletionRefused', `deletionPolicy Delete refused: ${refusal}. Nothing was deleted; set spec.deletionPolicy: Retain to finish the deletion and keep the data`);
    }
  }

  private async finalize(key: string, resource: ServiceResource): Promise<ReconcileResult> {
    const finalizers = resource.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) return {};
    const ns = resource.metadata.namespace!;
    const sources = secretSources(this.o.kind, resource);
    if (resource.spec.deletionPolicy === 'Delete') {
      const url = await this.secretValue(ns, sources.database.name, sources.database.key, 'spec.database.secretRef').catch((error: unknown) => {
        throw error instanceof CheckFailure
          ? new CheckFailure(error.reason, `${error.message}; or set spec.deletionPolicy: Retain to finish the deletion and keep the data`)
          : error;
      });
      const storage = await this.storageTarget(resource, sources);
      const location = locationOf(resource, url);
      const created = createdAtLocation(resource.status, location, storage?.target.accessKey);
      // Checked before anything goes, the Deployment included: a refused deletion leaves everything as it was.
      await this.refuseSharedData(resource, url, created.bucket);
      // Stop the writers first, so nothing writes into data being deleted.
      await this.o.client.delete(resources.deployment, ns, childName(this.o.kind, resource.metadata.name));
      const schema = resource.spec.database.schema;
      let detail: string;
      if (created.schema) {
        await dropSchema(url, schema, `Secret "${sources.database.name}" key "${sources.database.key}"`);
        detail = `Dropped the schema "${schema}"`;
      } else {
        detail = `Kept the schema "${schema}" in ${location.database ?? 'the database'}: it existed before this resource (the operator did not create it)`;
      }
      if (storage) {
        const count = await deleteObjects(storage.target, storage.where);
        detail += `; deleted ${count} objects${storage.target.prefix ? ` under "${storage.target.prefix}/"` : ''} in bucket "${storage.target.bucket}"`;
        if (created.bucket) {
          await deleteBucket(storage.target, storage.where);
          detail += ' and the bucket';
        } else {
          detail += `; kept the bucket "${storage.target.bucket}" at ${storage.target.endpoint}: it existed before this resource, or was created with other credentials`;
        }
      }
      const elsewhere = createdElsewhere(resource.status, location);
      if (elsewhere.length) detail += `; left what it created where the spec no longer points: ${elsewhere.join(', ')}`;
      await this.o.events.record(resource, 'Normal', 'DataDeleted', `${detail} (deletionPolicy Delete)`);
    } else {
      // Retain: the generated Secrets outlive the resource, so a new one of the same name signs in the same way.
      for (const generated of [sources.session, sources.admin].filter((s) => s.generated)) {
        const live = await this.secretMeta(ns, generated.name);
        const refs = live?.metadata.ownerReferences ?? [];
        if (!live || !refs.some((ref) => ref.uid === resource.metadata.uid)) continue;
        await this.o.client.mergePatch(resources.secret, ns, generated.name, {
          metadata: { ownerReferences: refs.filter((ref) => ref.uid !== resource.metadata.uid), resourceVersion: live.metadata.resourceVersion },
        });
      }
      await this.o.events.record(resource, 'Normal', 'DataRetained', 'Kept the database schema, the stored objects and the generated Secrets (deletionPolicy Retain)');
    }
    await this.o.client.mergePatch(this.o.kind.resource, ns, resource.metadata.name, {
      metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: resource.metadata.resourceVersion },
    });
    this.checked.delete(key);
    return {};
  }
}

function toFailure(error: unknown): CheckFailure | undefined {
  return error instanceof CheckFailure ? error : undefined;
}
