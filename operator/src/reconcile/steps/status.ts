// The resource's status: observedGeneration, kstatus conditions (Ready, Reconciling, Stalled) and what users read
// (url, replicas, image, the Secret names). Written only when it changed, so the steady state issues no writes;
// the Ready and Stalled transitions are also recorded as Events.
import type { CheckFailure } from '../../checks/check-failure.ts';
import type { ServiceResource, ServiceStatus } from '../../crds/types.ts';
import type { DesiredState } from '../../desired/index.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import { KubeApiError } from '@boxyard/kit/kube/client.ts';
import { conditionsFor, type DeploymentObject, type Phase } from '../conditions.ts';
import { hashOf } from '../drift.ts';
import type { EventSink, ReconcileClient } from './step-inputs.ts';

export interface StatusInput {
  client: ReconcileClient;
  kind: KindInfo;
  events: EventSink;
}

export const PAUSED: Phase = {
  state: 'paused',
  reason: 'Paused',
  message: 'Reconciliation is paused by the annotation boxyard.io/paused: "true"; remove it to resume',
};

/** The Stalled phase for a failed check; during deletion the message says the deletion is what is blocked. */
export function stalledPhase(resource: ServiceResource, failure: CheckFailure): Phase {
  return { state: 'stalled', reason: failure.reason, message: resource.metadata.deletionTimestamp ? `Deletion blocked: ${failure.message}` : failure.message };
}

/** What a successful reconcile reports besides the conditions. */
export function statusFields(desired: DesiredState, deployment: DeploymentObject | undefined): Partial<ServiceStatus> {
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

const stableEqual = (a: unknown, b: unknown): boolean => hashOf(a ?? null) === hashOf(b ?? null);

/** Writes the status when it changed (never otherwise: the steady state issues no writes); events on transitions. */
export async function writeStatus(input: StatusInput, resource: ServiceResource, phase: Phase, fields: Partial<ServiceStatus>): Promise<void> {
  const previous = resource.status ?? {};
  // Paused: nothing of the current generation was acted on, so the status must not claim to have observed it.
  const generation = phase.state === 'paused' ? (previous.observedGeneration ?? 0) : (resource.metadata.generation ?? 0);
  const next: ServiceStatus = { ...previous, ...fields, observedGeneration: generation, conditions: conditionsFor(phase, generation, previous.conditions) };
  if (stableEqual(next, previous)) return;
  try {
    await input.client.mergePatch(input.kind.resource, resource.metadata.namespace, resource.metadata.name, { status: next }, 'status');
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return; // deleted meanwhile
    throw error;
  }
  const was = (type: string) => previous.conditions?.find((c) => c.type === type);
  if (phase.state === 'ready' && was('Ready')?.status !== 'True') {
    await input.events.record(resource, 'Normal', 'Ready', `${input.kind.kind} is ready at ${next.url ?? ''}`);
  }
  if (phase.state === 'stalled' && (was('Stalled')?.status !== 'True' || was('Stalled')?.message !== phase.message)) {
    await input.events.record(resource, 'Warning', phase.reason, phase.message);
  }
}
