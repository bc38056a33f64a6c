// kstatus-compatible conditions (what `kubectl wait`, helm and Flux read): Ready=True only when the Deployment
// is rolled out and Available at the resource's current generation; Reconciling=True while progressing;
// Stalled=True when the operator cannot progress without someone fixing something (the reason says what).
import type { Condition, KubeObject } from '@boxyard/kit/kube/types.ts';

export interface Phase {
  state: 'ready' | 'progressing' | 'stalled' | 'paused';
  reason: string;
  message: string;
}

/** Conditions for `phase`, keeping lastTransitionTime of conditions whose status did not change. */
export function conditionsFor(phase: Phase, generation: number, previous: Condition[] = [], now = new Date().toISOString()): Condition[] {
  const wanted: Omit<Condition, 'lastTransitionTime'>[] = [];
  const ready = phase.state === 'ready';
  const previousReady = previous.find((c) => c.type === 'Ready');
  if (phase.state === 'paused') {
    // Paused: Ready keeps what it was; nothing is being reconciled.
    if (previousReady)
      wanted.push({
        type: 'Ready',
        status: previousReady.status,
        reason: previousReady.reason,
        message: previousReady.message,
        observedGeneration: previousReady.observedGeneration ?? generation,
      });
    wanted.push({ type: 'Reconciling', status: 'False', reason: phase.reason, message: phase.message, observedGeneration: generation });
    wanted.push({ type: 'Stalled', status: 'False', reason: phase.reason, message: phase.message, observedGeneration: generation });
  } else {
    wanted.push({ type: 'Ready', status: ready ? 'True' : 'False', reason: phase.reason, message: phase.message, observedGeneration: generation });
    wanted.push({
      type: 'Reconciling',
      status: phase.state === 'progressing' ? 'True' : 'False',
      reason: phase.state === 'progressing' ? phase.reason : ready ? 'Succeeded' : phase.reason,
      message: phase.state === 'progressing' ? phase.message : ready ? 'Reconciliation finished' : phase.message,
      observedGeneration: generation,
    });
    wanted.push({
      type: 'Stalled',
      status: phase.state === 'stalled' ? 'True' : 'False',
      reason: phase.state === 'stalled' ? phase.reason : ready ? 'Succeeded' : 'Progressing',
      message: phase.state === 'stalled' ? phase.message : ready ? 'Reconciliation finished' : 'Making progress',
      observedGeneration: generation,
    });
  }
  return wanted.map((condition) => {
    const old = previous.find((c) => c.type === condition.type);
    return { ...condition, lastTransitionTime: old && old.status === condition.status ? old.lastTransitionTime : now };
  });
}

interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
}
export type DeploymentObject = KubeObject & { spec?: { replicas?: number }; status?: DeploymentStatus };

/** Where a Deployment's rollout stands, by kstatus's rules for Deployments. */
export function deploymentPhase(deployment: DeploymentObject | undefined): Phase {
  if (!deployment) return { state: 'progressing', reason: 'Progressing', message: 'Waiting for the Deployment to be created' };
  const name = deployment.metadata.name;
  const status = deployment.status ?? {};
  const generation = deployment.metadata.generation ?? 0;
  if ((status.observedGeneration ?? 0) < generation) {
    return { state: 'progressing', reason: 'Progressing', message: `Deployment ${name}: waiting for the rollout of generation ${generation} to start` };
  }
  const progressing = status.conditions?.find((c) => c.type === 'Progressing');
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
    return {
      state: 'stalled',
      reason: 'ProgressDeadlineExceeded',
      message: `Deployment ${name} is not progressing: ${progressing.message ?? ''} (kubectl describe deployment ${name} shows why)`.trim(),
    };
  }
  const replicas = deployment.spec?.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  const total = status.replicas ?? 0;
  const available = status.availableReplicas ?? 0;
  if (updated < replicas) return { state: 'progressing', reason: 'Progressing', message: `Deployment ${name}: ${updated} of ${replicas} pods updated` };
  if (total > updated) return { state: 'progressing', reason: 'Progressing', message: `Deployment ${name}: ${total - updated} old pods terminating` };
  if (available < replicas) return { state: 'progressing', reason: 'Progressing', message: `Deployment ${name}: ${available} of ${replicas} pods available` };
  const availableCondition = status.conditions?.find((c) => c.type === 'Available');
  if (replicas > 0 && availableCondition?.status !== 'True') {
    return { state: 'progressing', reason: 'Progressing', message: `Deployment ${name}: waiting for the Available condition` };
  }
  return { state: 'ready', reason: 'Available', message: `Deployment ${name} is available with ${available} of ${replicas} pods` };
}
