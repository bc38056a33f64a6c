// A Backup's status: the phase, what the run reported, and kstatus conditions for it (Ready once Completed,
// Reconciling while Pending or Running, Stalled once Failed). Written only when it changed; each phase change
// is also an Event.
import { KubeApiError } from '@boxyard/kit/kube/client.ts';
import { conditionsFor, type Phase } from '../reconcile/conditions.ts';
import { hashOf } from '../reconcile/drift.ts';
import type { EventSink, ReconcileClient } from '../reconcile/steps/step-inputs.ts';
import { backupType, type Backup, type BackupPhase, type BackupStatus } from './types.ts';

export interface Outcome {
  phase: BackupPhase;
  reason: string;
  message: string;
}

const conditionPhase = ({ phase, reason, message }: Outcome): Phase => ({
  state: phase === 'Completed' ? 'ready' : phase === 'Failed' ? 'stalled' : 'progressing',
  reason,
  message,
});

export async function writeBackupStatus(
  input: { client: Pick<ReconcileClient, 'mergePatch'>; events: EventSink },
  backup: Backup,
  outcome: Outcome,
  fields: Partial<BackupStatus> = {},
): Promise<void> {
  const previous = backup.status ?? {};
  const generation = backup.metadata.generation ?? 0;
  const next: BackupStatus = {
    ...previous,
    ...fields,
    phase: outcome.phase,
    observedGeneration: generation,
    conditions: conditionsFor(conditionPhase(outcome), generation, previous.conditions),
  };
  if (hashOf(next) === hashOf(previous)) return;
  try {
    await input.client.mergePatch(backupType, backup.metadata.namespace, backup.metadata.name, { status: next }, 'status');
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return; // deleted meanwhile
    throw error;
  }
  backup.status = next;
  if (previous.phase !== outcome.phase || previous.conditions?.find((c) => c.type === 'Ready')?.reason !== outcome.reason) {
    await input.events.record(backup, outcome.phase === 'Failed' ? 'Warning' : 'Normal', outcome.reason, outcome.message);
  }
}
