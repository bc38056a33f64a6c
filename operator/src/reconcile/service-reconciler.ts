// The reconciler shared by the three kinds, controller-runtime style: a short, level-triggered sequence of steps
// (steps/), each given only what it needs. In order: the image allow-list, the finalizer, the dependency checks
// (referenced Secrets, database, bucket), the generated Secrets, server-side apply of the desired children, pruning
// of children no longer desired, and the status. On deletion, the finalizer's work instead (steps/finalize.ts).
// A CheckFailure from any step becomes Stalled with its reason; other errors are retried by the controller.
import { bootstrapFromBackup } from '../backups/bootstrap.ts';
import { CheckFailure } from '../checks/check-failure.ts';
import { hasStorage, type ServiceResource } from '../crds/types.ts';
import { secretSources } from '../desired/common.ts';
import { desiredState } from '../desired/index.ts';
import type { KindInfo } from '../desired/kinds.ts';
import { splitKey } from '@boxyard/kit/kube/types.ts';
import type { ReconcileResult } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import type { TracingDefaults } from '../desired/tracing.ts';
import { deploymentPhase } from './conditions.ts';
import { hashOf } from './drift.ts';
import type { ImagePolicy } from './image-policy.ts';
import { requireAllowedImages } from './steps/allowed-images.ts';
import { applyChildren } from './steps/apply-children.ts';
import type { DataStores } from './steps/data-stores.ts';
import { checkDataStores, requireReferencedSecrets, type PassedChecks } from './steps/dependency-checks.ts';
import { finalize } from './steps/finalize.ts';
import { addFinalizer } from './steps/finalizer.ts';
import { ensureGeneratedSecrets } from './steps/generated-secrets.ts';
import { pruneChildren } from './steps/prune-children.ts';
import { PAUSED, stalledPhase, statusFields, writeStatus } from './steps/status.ts';
import type { EventSink, ObjectCache, ReconcileClient } from './steps/step-inputs.ts';

export { FINALIZER } from './steps/finalizer.ts';
export { controllerUid } from './steps/ownership.ts';
export { OWNER_INDEX } from './steps/step-inputs.ts';
/** How often a resource whose restore Job runs looks at it again (the Job is not a watched child). */
const RESTORE_POLL_MS = 5000;
/** Index of primary informers: `namespace/secret` for every Secret the resource references. */
export const SECRET_INDEX = 'secrets';

export interface ServiceReconcilerOptions {
  client: ReconcileClient;
  kind: KindInfo;
  primary: Pick<Informer<ServiceResource>, 'get'>;
  /** Informers of the owned child types, by plural. */
  children: ReadonlyMap<string, ObjectCache>;
  /** Metadata-only informer of the Secrets in the watched namespaces. */
  secrets: Pick<ObjectCache, 'get'>;
  events: EventSink;
  defaultImage: string;
  /** The operator's OTEL_* settings, passed to service pods of resources that set none. */
  tracing?: TracingDefaults;
  /** Images resources may name (the default image is always allowed). */
  imagePolicy: Pick<ImagePolicy, 'require'>;
  /** The ClusterRole the terminal gateway's RoleBinding refers to (the chart ships it). */
  gatewayClusterRole?: string;
  /** Every resource of every kind the operator watches (for deletionPolicy Delete: whose data is shared). */
  peers: () => ServiceResource[];
  serviceMonitorAvailable: () => Promise<boolean>;
  /** PostgreSQL and S3 (default: the real ones; unit tests pass stand-ins). */
  dataStores?: DataStores;
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

export class ServiceReconciler {
  private readonly o: ServiceReconcilerOptions;
  /** Per resource, the fingerprint (spec of database/storage + Secret versions) that last passed the checks. */
  private readonly checked: PassedChecks = new Map();

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
      if (resource.metadata.deletionTimestamp) {
        if (await finalize(this.o, resource)) this.checked.delete(key);
        return {};
      }
      return (await this.converge(key, resource)) ?? {};
    } catch (error) {
      if (!(error instanceof CheckFailure)) throw error;
      await writeStatus(this.o, resource, stalledPhase(resource, error), {});
      return { stalled: true };
    }
  };

  onPaused = async (resource: ServiceResource): Promise<void> => {
    await writeStatus(this.o, structuredClone(resource), PAUSED, {});
  };

  /** The steps of a resource that is not being deleted, in order. */
  private async converge(key: string, resource: ServiceResource): Promise<ReconcileResult | void> {
    const o = this.o;
    // Before anything else, the finalizer included: a refused image creates and changes nothing.
    requireAllowedImages(o.imagePolicy, o.kind, resource);
    await addFinalizer(o.client, o.kind, resource);
    const sources = secretSources(o.kind, resource);
    await requireReferencedSecrets(o, resource, sources);
    await checkDataStores(o, key, resource, sources, this.checked);
    const versions = await ensureGeneratedSecrets(o, resource, sources);
    const desired = desiredState({
      kind: o.kind,
      resource,
      defaultImage: o.defaultImage,
      tracing: o.tracing,
      gatewayClusterRole: o.gatewayClusterRole,
      serviceMonitorAvailable: await o.serviceMonitorAvailable(),
      secretDigest: hashOf(versions),
    });
    if (!(await bootstrapFromBackup(o, resource, desired))) {
      await writeStatus(
        o,
        resource,
        { state: 'progressing', reason: 'Restoring', message: 'Restoring spec.bootstrap.fromBackup before the service starts' },
        statusFields(desired, undefined),
      );
      return { requeueAfterMs: RESTORE_POLL_MS };
    }
    const deployment = await applyChildren(o, resource, desired);
    await pruneChildren(o, resource, desired);
    await writeStatus(o, resource, deploymentPhase(deployment), statusFields(desired, deployment));
  }
}
