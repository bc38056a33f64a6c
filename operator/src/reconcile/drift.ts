// Deciding whether a child needs a server-side apply. Applying an unchanged object is harmless but still a write
// request; at steady state the operator must issue none. A child is applied when it is missing, when the hash of
// what was last applied differs (the spec changed, or a field was dropped from the desired object), or when a field
// the operator sets has drifted in the live object (someone edited or scaled it). The comparison treats
// quantities by value: the apiserver stores `1000m` as `1`.
import { createHash } from 'node:crypto';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';

export const APPLIED_HASH_ANNOTATION = 'boxyard.io/applied-hash';

function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stable((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export const hashOf = (value: unknown): string => createHash('sha256').update(stable(value)).digest('hex').slice(0, 32);

/** The desired object with the annotation recording its own hash. */
export function withAppliedHash(object: KubeObject): KubeObject {
  const hash = hashOf(object);
  return { ...object, metadata: { ...object.metadata, annotations: { ...(object.metadata.annotations ?? {}), [APPLIED_HASH_ANNOTATION]: hash } } };
}

const SUFFIXES: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a Kubernetes quantity (`500m`, `1Gi`, `1e3`), or undefined when it is not one. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  const match = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(value);
  if (!match) return undefined;
  const number = Number(match[1]);
  if (match[2]) return number * 10 ** Number(match[2].slice(1));
  return number * (SUFFIXES[match[3] ?? ''] ?? 1);
}

function sameScalar(desired: unknown, live: unknown): boolean {
  if (desired === live) return true;
  const a = parseQuantity(desired);
  const b = parseQuantity(live);
  return a !== undefined && b !== undefined && Math.abs(a - b) <= Math.abs(a) * 1e-9;
}

/** Every field of `desired` is present in `live` with an equal value (lists compared position by position). */
export function isSubset(desired: unknown, live: unknown): boolean {
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length < desired.length) return false;
    return desired.every((item, i) => isSubset(item, live[i]));
  }
  if (desired && typeof desired === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return false;
    return Object.entries(desired).every(([key, value]) => isSubset(value, (live as Record<string, unknown>)[key]));
  }
  return sameScalar(desired, live);
}

/** True when `desired` (carrying its applied-hash annotation) must be applied over `live`. */
export function needsApply(desired: KubeObject, live: KubeObject | undefined): boolean {
  if (!live) return true;
  const hash = desired.metadata.annotations?.[APPLIED_HASH_ANNOTATION];
  if (live.metadata.annotations?.[APPLIED_HASH_ANNOTATION] !== hash) return true;
  // Status and server-populated metadata are not compared; only what the operator sets.
  const { metadata, ...body } = desired;
  return (
    !isSubset(body, { ...live, metadata: undefined }) ||
    !isSubset({ labels: metadata.labels, annotations: metadata.annotations, ownerReferences: metadata.ownerReferences }, live.metadata)
  );
}
