// The ScheduledBackup controller's reconciler, level-triggered: it prunes the schedule's finished Backups beyond
// its retention (their files in S3 first, then the object), then creates the Backup of the run that is due (named
// after the run's time, so it is created once however often this runs), unless the previous one still runs or
// the schedule is suspended, and requeues itself for the next run. A schedule that does not parse is Stalled
// with the reason and an Event until the spec changes.
import type { ServiceResource } from '../crds/types.ts';
import { allKinds } from '../desired/kinds.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { isConflict, KubeApiError } from '@boxyard/kit/kube/client.ts';
import { splitKey } from '@boxyard/kit/kube/types.ts';
import { conditionsFor, type Phase } from '../reconcile/conditions.ts';
import { hashOf } from '../reconcile/drift.ts';
import type { EventSink, ObjectCache } from '../reconcile/steps/step-inputs.ts';
import type { ReconcileResult } from '../runtime/controller.ts';
import { deleteBackupData } from './backup-data.ts';
import { backupsToPrune, dueRun, parseSchedule, ScheduleError, scheduledBackupName } from './schedule.ts';
import { backupType, SCHEDULE_LABEL, scheduledBackupType, type Backup, type ScheduledBackup, type ScheduledBackupStatus } from './types.ts';

export interface ScheduledBackupReconcilerOptions {
  client: Pick<KubeClient, 'create' | 'delete' | 'mergePatch' | 'get'>;
  schedules: Pick<ObjectCache<ScheduledBackup>, 'get'>;
  /** Every Backup in the watched namespaces. */
  backups: { list(): Backup[] };
  sources: ReadonlyMap<string, Pick<ObjectCache<ServiceResource>, 'get'>>;
  events: EventSink;
  log: (line: string) => void;
  now?: () => Date;
}

const WAIT_MS = 15_000;
const SOURCE_RETRY_MS = 60_000;
/** Longest sleep before looking again; the resync and Backup events wake it earlier. */
const MAX_SLEEP_MS = 10 * 60_000;

export class ScheduledBackupReconciler {
  private readonly o: ScheduledBackupReconcilerOptions;

  constructor(options: ScheduledBackupReconcilerOptions) {
    this.o = options;
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const { namespace, name } = splitKey(key);
    const cached = this.o.schedules.get(namespace, name);
    if (!cached || cached.metadata.deletionTimestamp) return {};
    const schedule = structuredClone(cached);
    const now = this.o.now?.() ?? new Date();
    let cron;
    try {
      cron = parseSchedule(schedule.spec.schedule);
    } catch (error) {
      if (!(error instanceof ScheduleError)) throw error;
      await this.writeStatus(schedule, { state: 'stalled', reason: 'InvalidSchedule', message: error.message }, {});
      return {}; // until the spec changes
    }
    const mine = this.o.backups.list().filter((b) => b.metadata.namespace === namespace && b.metadata.labels?.[SCHEDULE_LABEL] === name);
    await this.prune(schedule, mine, now);

    const { kind, name: sourceName } = schedule.spec.source;
    const source = this.o.sources.get(kind)?.get(namespace, sourceName);
    if (!allKinds.some((k) => k.kind === kind) || !source) {
      await this.writeStatus(
        schedule,
        {
          state: 'stalled',
          reason: 'SourceNotFound',
          message: `${kind} ${sourceName} does not exist in namespace ${namespace}: no backups are made until it does`,
        },
        {},
      );
      return { requeueAfterMs: SOURCE_RETRY_MS };
    }
    const next = cron.nextRun(now);
    const fields: ScheduledBackupStatus = { ...(next ? { nextScheduleTime: next.toISOString() } : {}) };
    const sleep = { requeueAfterMs: next ? Math.min(MAX_SLEEP_MS, Math.max(1000, next.getTime() - now.getTime() + 500)) : MAX_SLEEP_MS };
    if (schedule.spec.suspend) {
      await this.writeStatus(schedule, { state: 'ready', reason: 'Suspended', message: 'spec.suspend is true: no new Backups; retention still applies' }, {});
      return sleep;
    }
    const last = new Date(schedule.status?.lastScheduleTime ?? schedule.metadata.creationTimestamp ?? now.toISOString());
    const due = dueRun(cron, last, now);
    if (due) {
      const running = mine.find((b) => b.status?.phase !== 'Completed' && b.status?.phase !== 'Failed');
      if (running) {
        await this.writeStatus(
          schedule,
          { state: 'progressing', reason: 'Waiting', message: `the run of ${due.toISOString()} waits for Backup ${running.metadata.name} to finish` },
          fields,
        );
        return { requeueAfterMs: WAIT_MS };
      }
      const backupName = await this.createBackup(schedule, due);
      Object.assign(fields, { lastScheduleTime: due.toISOString(), lastBackupName: backupName });
    }
    await this.writeStatus(
      schedule,
      { state: 'ready', reason: 'Scheduled', message: next ? `next Backup at ${next.toISOString()}` : 'the schedule has no future run' },
      fields,
    );
    return sleep;
  };

  private async createBackup(schedule: ScheduledBackup, at: Date): Promise<string> {
    const name = scheduledBackupName(schedule, at);
    const backup: Backup = {
      apiVersion: `${backupType.group}/${backupType.version}`,
      kind: backupType.kind,
      // No owner: deleting the schedule keeps its backups (delete them, or let another schedule's retention).
      metadata: { name, namespace: schedule.metadata.namespace, labels: { [SCHEDULE_LABEL]: schedule.metadata.name } },
      spec: { source: schedule.spec.source, destination: schedule.spec.destination },
    };
    try {
      await this.o.client.create(backup);
      await this.o.events.record(schedule, 'Normal', 'BackupCreated', `Backup ${name} created for the run of ${at.toISOString()}`);
    } catch (error) {
      if (!isConflict(error)) throw error; // created by an earlier reconcile whose status write was lost
    }
    return name;
  }

  private async prune(schedule: ScheduledBackup, mine: Backup[], now: Date): Promise<void> {
    for (const backup of backupsToPrune(schedule, mine, now)) {
      try {
        if (backup.status?.phase === 'Completed') await deleteBackupData(this.o.client, backup);
        await this.o.client.delete(backupType, backup.metadata.namespace, backup.metadata.name, { uid: backup.metadata.uid, propagationPolicy: 'Background' });
        await this.o.events.record(
          schedule,
          'Normal',
          'BackupPruned',
          `Backup ${backup.metadata.name} (${backup.status?.phase}) deleted by the retention${backup.status?.location ? `, with ${backup.status.location}` : ''}`,
        );
      } catch (error) {
        // Kept for the next round; the Event says why.
        await this.o.events.record(schedule, 'Warning', 'PruneFailed', `Backup ${backup.metadata.name} could not be pruned: ${(error as Error).message}`);
      }
    }
  }

  private async writeStatus(schedule: ScheduledBackup, phase: Phase, fields: ScheduledBackupStatus): Promise<void> {
    const previous = schedule.status ?? {};
    const generation = schedule.metadata.generation ?? 0;
    const next: ScheduledBackupStatus = {
      ...previous,
      ...fields,
      observedGeneration: generation,
      conditions: conditionsFor(phase, generation, previous.conditions),
    };
    if (hashOf(next) === hashOf(previous)) return;
    try {
      await this.o.client.mergePatch(scheduledBackupType, schedule.metadata.namespace, schedule.metadata.name, { status: next }, 'status');
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return;
      throw error;
    }
    const before = previous.conditions?.find((c) => c.type === 'Ready');
    if (phase.state === 'stalled' && before?.reason !== phase.reason) await this.o.events.record(schedule, 'Warning', phase.reason, phase.message);
  }
}
