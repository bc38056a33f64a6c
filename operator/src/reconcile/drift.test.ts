import { describe, expect, it } from 'vitest';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { APPLIED_HASH_ANNOTATION, isSubset, needsApply, parseQuantity, withAppliedHash } from './drift.ts';

const deployment = (replicas: number, memory: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', namespace: 'ns', labels: { app: 'x' } },
  spec: { replicas, template: { spec: { containers: [{ name: 'c', resources: { limits: { memory, cpu: '1000m' } } }] } } },
});

/** What the apiserver returns for an applied object: defaults added, quantities canonicalised. */
function asStored(desired: KubeObject): KubeObject {
  const stored = structuredClone(desired) as KubeObject & { spec: { template: { spec: { containers: Record<string, unknown>[] } } } };
  stored.metadata = { ...stored.metadata, uid: 'u', resourceVersion: '7', generation: 1 };
  const container = stored.spec.template.spec.containers[0]!;
  container.resources = { limits: { ...(container.resources as { limits: Record<string, string> }).limits, cpu: '1' } };
  container.terminationMessagePath = '/dev/termination-log';
  (stored.spec as Record<string, unknown>).progressDeadlineSeconds = 600;
  stored.status = { replicas: 1 };
  return stored;
}

describe('drift detection', () => {
  it('parses Kubernetes quantities by value', () => {
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('1')).toBe(1);
    expect(parseQuantity('128Mi')).toBe(128 * 2 ** 20);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity(2)).toBe(2);
    expect(parseQuantity('http')).toBeUndefined();
  });

  it('sees no difference between what it applied and the stored, defaulted object', () => {
    const desired = withAppliedHash(deployment(1, '512Mi'));
    expect(needsApply(desired, asStored(desired))).toBe(false);
  });

  it('applies when the child is missing, the desired object changed, or a field it owns drifted', () => {
    const desired = withAppliedHash(deployment(1, '512Mi'));
    expect(needsApply(desired, undefined)).toBe(true);
    expect(needsApply(withAppliedHash(deployment(2, '512Mi')), asStored(desired))).toBe(true);
    const scaledByHand = asStored(desired) as KubeObject & { spec: { replicas: number } };
    scaledByHand.spec.replicas = 5;
    expect(needsApply(desired, scaledByHand)).toBe(true);
    const relabelled = asStored(desired);
    relabelled.metadata.labels = { app: 'other' };
    expect(needsApply(desired, relabelled)).toBe(true);
  });

  it('applies when a field was dropped from the desired object (only the hash can tell)', () => {
    const withIngressAnnotation = withAppliedHash({ ...deployment(1, '1Gi'), metadata: { name: 'd', annotations: { a: '1' } } });
    const without = withAppliedHash({ ...deployment(1, '1Gi'), metadata: { name: 'd' } });
    expect(isSubset(without.spec, asStored(withIngressAnnotation).spec)).toBe(true);
    expect(needsApply(without, asStored(withIngressAnnotation))).toBe(true);
    expect(without.metadata.annotations?.[APPLIED_HASH_ANNOTATION]).not.toBe(withIngressAnnotation.metadata.annotations?.[APPLIED_HASH_ANNOTATION]);
  });

  it('compares lists by position and values exactly, quantities aside', () => {
    expect(isSubset([{ a: 1 }], [{ a: 1, b: 2 }, { c: 3 }])).toBe(true);
    expect(isSubset([{ a: 1 }, { a: 2 }], [{ a: 1 }])).toBe(false);
    expect(isSubset({ port: 'http' }, { port: 'https' })).toBe(false);
    expect(isSubset({ memory: '1Gi' }, { memory: '1024Mi' })).toBe(true);
  });
});
