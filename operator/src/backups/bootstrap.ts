// spec.bootstrap.fromBackup: before a new resource's service first starts, a Job from its image runs
// `boxyard restore <the Backup's location> --service <service>` into its schema and storage, with its own config
// and Secrets. The ConfigMap is applied first (the Job mounts it); the Deployment only once the restore is done,
// which status.bootstrap records so that it happens once. A missing or unfinished Backup, and a failed restore
// (a target that holds data, a backup made by a newer Boxyard), stop the resource with a Stalled condition that
// says why; the restore refuses a non-empty target itself, so nothing is ever overwritten.
import { CheckFailure } from '../checks/check-failure.ts';
import type { ServiceResource } from '../crds/types.ts';
import type { DesiredState } from '../desired/index.ts';
import type { KindInfo } from '../desired/kinds.ts';
import { childName } from '../desired/common.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { isNotFound, KubeApiError } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { EventSink } from '../reconcile/steps/step-inputs.ts';
import { desiredBackupJob } from './job.ts';
import { jobFinished, jobResult, type JobObject } from './job-result.ts';
import { backupType, type Backup } from './types.ts';

export interface BootstrapInput {
  /** `list` reads a failed Job's message (the operator's client has it; unit-test fakes may not). */
  client: Pick<KubeClient, 'get' | 'apply' | 'mergePatch'> & Partial<Pick<KubeClient, 'list'>>;
  kind: KindInfo;
  events: EventSink;
}

export const restoreJobName = (kind: KindInfo, resource: ServiceResource) => `${childName(kind, resource.metadata.name)}-restore`;

/** True once the resource's data is in place (or it has no fromBackup); false while the restore runs. */
export async function bootstrapFromBackup(input: BootstrapInput, resource: ServiceResource, desired: DesiredState): Promise<boolean> {
  const from = (resource.spec as { bootstrap?: { fromBackup?: { name: string } } }).bootstrap?.fromBackup;
  if (!from || resource.status?.bootstrap?.restoredFrom) return true;
  const { namespace } = resource.metadata;
  const backup = await input.client.get<Backup>(backupType, namespace, from.name);
  if (!backup) throw new CheckFailure('BackupNotFound', `spec.bootstrap.fromBackup: Backup ${from.name} does not exist in namespace ${namespace}`);
  if (backup.status?.phase !== 'Completed' || !backup.status.location) {
    throw new CheckFailure(
      'BackupNotCompleted',
      `spec.bootstrap.fromBackup: Backup ${from.name} is ${backup.status?.phase ?? 'not started'}; only a Completed backup can be restored`,
    );
  }
  if (backup.spec.source.kind !== input.kind.kind) {
    throw new CheckFailure('BackupKindMismatch', `spec.bootstrap.fromBackup: Backup ${from.name} holds a ${backup.spec.source.kind}, not a ${input.kind.kind}`);
  }
  const name = restoreJobName(input.kind, resource);
  const job = await input.client.get<JobObject>(resources.job, namespace, name);
  if (!job) {
    // The Job mounts the service's config: the ConfigMap goes first.
    for (const object of desired.objects.filter((o) => o.kind === 'ConfigMap')) await input.client.apply(object);
    await input.client.apply(
      desiredBackupJob({
        backup,
        kind: input.kind,
        source: resource,
        image: desired.image,
        command: 'restore',
        location: backup.status.location,
        name,
        owner: resource,
      }),
    );
    await input.events.record(
      resource,
      'Normal',
      'Restoring',
      `Job ${name} restores Backup ${from.name} (${backup.status.location}) before the service starts`,
    );
    return false;
  }
  if (jobFinished(job, 'Complete')) {
    await recordRestored(input, resource, from.name, backup.status.location);
    await input.events.record(resource, 'Normal', 'Restored', `Backup ${from.name} restored; starting the service`);
    return true;
  }
  if (jobFinished(job, 'Failed')) {
    const result = input.client.list ? await jobResult({ list: input.client.list.bind(input.client) }, namespace!, name) : undefined;
    const error = result?.error ?? `Job ${name} failed (kubectl logs job/${name} shows why)`;
    const reason = error.includes('already holds') ? 'TargetNotEmpty' : error.includes('newer than this Boxyard') ? 'BackupTooNew' : 'RestoreFailed';
    throw new CheckFailure(
      reason,
      `spec.bootstrap.fromBackup: restoring Backup ${from.name} failed: ${error}. Delete the Job ${name} to try again once this is fixed`,
    );
  }
  return false;
}

async function recordRestored(input: BootstrapInput, resource: ServiceResource, backup: string, location: string): Promise<void> {
  const bootstrap = { restoredFrom: backup, location, restoredAt: new Date().toISOString() };
  try {
    await input.client.mergePatch(input.kind.resource, resource.metadata.namespace, resource.metadata.name, { status: { bootstrap } }, 'status');
  } catch (error) {
    if (error instanceof KubeApiError && isNotFound(error)) return;
    throw error;
  }
  resource.status = { ...resource.status, bootstrap };
}
