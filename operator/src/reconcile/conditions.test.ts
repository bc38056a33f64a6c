import { describe, expect, it } from 'vitest';
import { conditionsFor, deploymentPhase, type DeploymentObject } from './conditions.ts';

const deployment = (generation: number, status: DeploymentObject['status'], replicas = 2): DeploymentObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', generation },
  spec: { replicas },
  status,
});
const available = [{ type: 'Available', status: 'True' }];

describe('deployment phase (kstatus rules)', () => {
  it('is progressing until the controller has observed the current generation', () => {
    const phase = deploymentPhase(deployment(3, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2, conditions: available }));
    expect(phase.state).toBe('progressing');
    expect(phase.message).toMatch(/generation 3/);
  });

  it('is progressing while pods are updated, old pods terminate or new ones are not yet available', () => {
    expect(deploymentPhase(deployment(1, { observedGeneration: 1, replicas: 2, updatedReplicas: 1, availableReplicas: 1 })).message).toMatch(
      /1 of 2 pods updated/,
    );
    expect(deploymentPhase(deployment(1, { observedGeneration: 1, replicas: 3, updatedReplicas: 2, availableReplicas: 2 })).message).toMatch(
      /1 old pods terminating/,
    );
    expect(deploymentPhase(deployment(1, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 })).message).toMatch(
      /1 of 2 pods available/,
    );
    expect(deploymentPhase(undefined).state).toBe('progressing');
  });

  it('is ready when rolled out and Available, stalled when the progress deadline passed', () => {
    expect(
      deploymentPhase(deployment(1, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2, conditions: available }))
        .state,
    ).toBe('ready');
    expect(deploymentPhase(deployment(1, { observedGeneration: 1 }, 0)).state).toBe('ready'); // scaled to zero: nothing to wait for
    expect(deploymentPhase(deployment(1, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 })).state).toBe('progressing'); // no Available condition yet
    const stuck = deploymentPhase(
      deployment(1, {
        observedGeneration: 1,
        replicas: 2,
        updatedReplicas: 2,
        availableReplicas: 0,
        conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "web-1" has timed out progressing.' }],
      }),
    );
    expect(stuck).toMatchObject({ state: 'stalled', reason: 'ProgressDeadlineExceeded' });
  });
});

describe('conditions', () => {
  it('sets Ready, Reconciling and Stalled consistently for each phase', () => {
    const byType = (phase: Parameters<typeof conditionsFor>[0]) => Object.fromEntries(conditionsFor(phase, 4).map((c) => [c.type, `${c.status}/${c.reason}`]));
    expect(byType({ state: 'ready', reason: 'Available', message: 'ok' })).toEqual({
      Ready: 'True/Available',
      Reconciling: 'False/Succeeded',
      Stalled: 'False/Succeeded',
    });
    expect(byType({ state: 'progressing', reason: 'Progressing', message: '1 of 2' })).toEqual({
      Ready: 'False/Progressing',
      Reconciling: 'True/Progressing',
      Stalled: 'False/Progressing',
    });
    expect(byType({ state: 'stalled', reason: 'SecretNotFound', message: 'create it' })).toEqual({
      Ready: 'False/SecretNotFound',
      Reconciling: 'False/SecretNotFound',
      Stalled: 'True/SecretNotFound',
    });
    expect(conditionsFor({ state: 'ready', reason: 'Available', message: 'ok' }, 4).every((c) => c.observedGeneration === 4)).toBe(true);
  });

  it('keeps lastTransitionTime while a condition keeps its status, and moves it when the status changes', () => {
    const first = conditionsFor({ state: 'progressing', reason: 'Progressing', message: 'a' }, 1, [], '2026-01-01T00:00:00Z');
    const second = conditionsFor({ state: 'progressing', reason: 'Progressing', message: 'b' }, 1, first, '2026-01-01T00:01:00Z');
    expect(second.find((c) => c.type === 'Ready')!.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    const third = conditionsFor({ state: 'ready', reason: 'Available', message: 'c' }, 1, second, '2026-01-01T00:02:00Z');
    expect(third.find((c) => c.type === 'Ready')!.lastTransitionTime).toBe('2026-01-01T00:02:00Z');
  });

  it('leaves Ready as it was while paused', () => {
    const ready = conditionsFor({ state: 'ready', reason: 'Available', message: 'ok' }, 1);
    const paused = conditionsFor({ state: 'paused', reason: 'Paused', message: 'paused' }, 2, ready);
    expect(paused.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Available' });
    expect(paused.find((c) => c.type === 'Reconciling')).toMatchObject({ status: 'False', reason: 'Paused' });
  });
});
