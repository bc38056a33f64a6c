// Wiring of the backup controllers into the leader's work (leader.ts): a Backup controller (its Jobs are owned
// children) and a ScheduledBackup controller (its Backups map to it by label), sharing the service kinds'
// primary informers and the metadata-only Secrets informer.
import type { Logger } from '../runtime/logger.ts';
import type { ServiceResource } from '../crds/types.ts';
import { MANAGED_BY_SELECTOR } from '../desired/common.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { Controller } from '../runtime/controller.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Informer } from '../runtime/informer.ts';
import type { OperatorMetrics } from '../runtime/metrics.ts';
import { BackupReconciler } from './backup-reconciler.ts';
import { ScheduledBackupReconciler } from './scheduled-backup-reconciler.ts';
import { SCHEDULE_LABEL, type Backup, type ScheduledBackup } from './types.ts';

export interface BackupControllerInputs {
  client: KubeClient;
  informer<T extends KubeObject>(type: ResourceType, extra?: { labelSelector?: string; resyncMs?: number }): Informer<T>;
  /** The service kinds' primary informers. */
  primaries: Informer<ServiceResource>[];
  secrets: Informer;
  events: EventRecorder;
  defaultImage: string;
  metrics: OperatorMetrics;
  resyncMs: number;
  workers: number;
  logger: Logger;
  log: (line: string) => void;
}

export function backupControllers(input: BackupControllerInputs): { informers: Informer[]; controllers: Controller<KubeObject>[] } {
  const backups = input.informer<Backup>(resources.backup, { resyncMs: input.resyncMs });
  const schedules = input.informer<ScheduledBackup>(resources.scheduledBackup, { resyncMs: input.resyncMs });
  const jobs = input.informer(resources.job, { labelSelector: MANAGED_BY_SELECTOR });
  const sources = new Map(input.primaries.map((p) => [p.type.kind, p]));

  const backupReconciler = new BackupReconciler({
    client: input.client,
    backups,
    sources,
    jobs,
    secrets: input.secrets,
    events: input.events,
    defaultImage: input.defaultImage,
  });
  const backupController = new Controller<Backup>({
    name: 'backups',
    primary: backups,
    reconcile: backupReconciler.reconcile,
    workers: input.workers,
    metrics: input.metrics,
    logger: input.logger,
    log: input.log,
  });
  backupController.watchOwned(jobs);

  const scheduleReconciler = new ScheduledBackupReconciler({ client: input.client, schedules, backups, sources, events: input.events, log: input.log });
  const scheduleController = new Controller<ScheduledBackup>({
    name: 'scheduledbackups',
    primary: schedules,
    reconcile: scheduleReconciler.reconcile,
    workers: 2,
    metrics: input.metrics,
    logger: input.logger,
    log: input.log,
  });
  scheduleController.watchMapped(backups as unknown as Informer, (b) => {
    const owner = b.metadata.labels?.[SCHEDULE_LABEL];
    return owner && b.metadata.namespace ? [`${b.metadata.namespace}/${owner}`] : [];
  });

  return { informers: [backups, schedules, jobs] as Informer[], controllers: [backupController, scheduleController] as unknown as Controller<KubeObject>[] };
}
