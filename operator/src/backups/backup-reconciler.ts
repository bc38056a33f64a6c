// The Backup controller's reconciler, level-triggered: from the Backup, its source resource and its Job, it
// converges on one of: refused (the source is missing or being deleted: Failed with the reason, never retried),
// waiting (the destination's Secret is missing: Pending and Stalled until it appears), Running (the Job exists),
// and Completed or Failed (the Job finished; the pod's termination message carries the result). A finished Backup
// is never acted on again: it is a record, and its Job is kept for `kubectl logs` until the Backup is deleted.
import type { ServiceResource } from '../crds/types.ts';
import { allKinds, type KindInfo } from '../desired/kinds.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { splitKey } from '@boxyard/kit/kube/types.ts';
import type { ReconcileResult } from '../runtime/controller.ts';
import type { EventSink, ObjectCache } from '../reconcile/steps/step-inputs.ts';
import { writeBackupStatus, type Outcome } from './backup-status.ts';
import { desiredBackupJob, jobName } from './job.ts';
import { jobResult, type JobObject } from './job-result.ts';
import { backupLocation, type Backup } from './types.ts';

export interface BackupReconcilerOptions {
  client: Pick<KubeClient, 'apply' | 'mergePatch' | 'list'>;
  backups: Pick<ObjectCache<Backup>, 'get'>;
  /** The service resources by kind (the primaries of the service controllers). */
  sources: ReadonlyMap<string, Pick<ObjectCache<ServiceResource>, 'get'>>;
  jobs: Pick<ObjectCache, 'get'>;
  secrets: Pick<ObjectCache, 'get'>;
  events: EventSink;
  defaultImage: string;
}

const SECRET_RETRY_MS = 30_000;

export class BackupReconciler {
  private readonly o: BackupReconcilerOptions;

  constructor(options: BackupReconcilerOptions) {
    this.o = options;
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const { namespace, name } = splitKey(key);
    const cached = this.o.backups.get(namespace, name);
    if (!cached || cached.metadata.deletionTimestamp) return {};
    const backup = structuredClone(cached);
    const phase = backup.status?.phase;
    if (phase === 'Completed' || phase === 'Failed') return {};
    const job = this.o.jobs.get(namespace, jobName(backup)) as JobObject | undefined;
    if (job) return this.follow(backup, job);
    return this.start(backup);
  };

  private async start(backup: Backup): Promise<ReconcileResult> {
    const { namespace } = backup.metadata;
    const { kind: kindName, name } = backup.spec.source;
    const kind = allKinds.find((k) => k.kind === kindName);
    const source = kind ? this.o.sources.get(kind.kind)?.get(namespace, name) : undefined;
    if (!kind || !source) return this.refuse(backup, 'SourceNotFound', `${kindName} ${name} does not exist in namespace ${namespace}: nothing to back up`);
    if (source.metadata.deletionTimestamp)
      return this.refuse(backup, 'SourceDeleting', `${kindName} ${name} is being deleted: a backup now could miss data; back it up before deleting it`);
    const secret = backup.spec.destination.s3.credentialsSecretRef.name;
    if (!this.o.secrets.get(namespace, secret)) {
      await writeBackupStatus(this.o, backup, {
        phase: 'Pending',
        reason: 'SecretNotFound',
        message: `Secret ${secret} (spec.destination.s3.credentialsSecretRef) does not exist in namespace ${namespace}; the backup starts once it does`,
      });
      return { requeueAfterMs: SECRET_RETRY_MS };
    }
    return this.createJob(backup, kind, source);
  }

  private async createJob(backup: Backup, kind: KindInfo, source: ServiceResource): Promise<ReconcileResult> {
    const image = source.spec.image ?? this.o.defaultImage;
    await this.o.client.apply(desiredBackupJob({ backup, kind, source, image }));
    await writeBackupStatus(
      this.o,
      backup,
      { phase: 'Running', reason: 'JobStarted', message: `Job ${jobName(backup)} backs up ${kind.kind} ${source.metadata.name} to ${backupLocation(backup)}` },
      { jobName: jobName(backup), startedAt: new Date().toISOString(), location: backupLocation(backup) },
    );
    return {};
  }

  private async follow(backup: Backup, job: JobObject): Promise<ReconcileResult> {
    const condition = (type: string) => job.status?.conditions?.find((c) => c.type === type && c.status === 'True');
    const complete = condition('Complete');
    const failed = condition('Failed');
    const name = job.metadata.name;
    if (!complete && !failed) {
      // The status may be missing if the operator stopped between creating the Job and writing it.
      await writeBackupStatus(
        this.o,
        backup,
        { phase: 'Running', reason: 'JobStarted', message: `Job ${name} is running` },
        {
          jobName: name,
          startedAt: backup.status?.startedAt ?? job.metadata.creationTimestamp ?? new Date().toISOString(),
          location: backupLocation(backup),
        },
      );
      return {};
    }
    const result = await jobResult(this.o.client, backup.metadata.namespace!, name);
    const completedAt = job.status?.completionTime ?? new Date().toISOString();
    if (complete && result?.ok !== false) {
      const outcome: Outcome = {
        phase: 'Completed',
        reason: 'Completed',
        message: `Backed up to ${result?.location ?? backupLocation(backup)}: ${result?.objects ?? '?'} objects, ${result?.bytes ?? '?'} bytes`,
      };
      await writeBackupStatus(this.o, backup, outcome, {
        completedAt,
        location: result?.location ?? backupLocation(backup),
        ...(result?.bytes !== undefined ? { size: result.bytes } : {}),
        ...(result?.objects !== undefined ? { objectCount: result.objects } : {}),
        ...(result?.boxyard_version ? { boxyardVersion: result.boxyard_version } : {}),
      });
      return {};
    }
    const error = result?.error ?? failed?.message ?? `Job ${name} failed (kubectl logs job/${name} shows why)`;
    await writeBackupStatus(this.o, backup, { phase: 'Failed', reason: 'BackupFailed', message: `Job ${name} failed: ${error}` }, { completedAt, error });
    return {};
  }

  /** Terminal states that retrying cannot change: Failed, with the reason, and an Event. */
  private async refuse(backup: Backup, reason: string, message: string): Promise<ReconcileResult> {
    await writeBackupStatus(this.o, backup, { phase: 'Failed', reason, message }, { completedAt: new Date().toISOString(), error: message });
    return {};
  }
}
