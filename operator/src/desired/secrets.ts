// Secrets the operator generates (session signing key, first admin password). They are created once and never
// overwritten: the reconciler creates them only when absent, never applies them.
import { randomBytes } from 'node:crypto';
import type { ServiceResource } from '../crds/types.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { childMeta, type SecretSources } from './common.ts';
import type { KindInfo } from './kinds.ts';

export interface GeneratedValues {
  sessionSecret: string;
  adminPassword: string;
}

/** 384-bit signing key; a password that meets the services' policy (upper, lower, digit) by construction. */
export const generateValues = (): GeneratedValues => ({
  sessionSecret: randomBytes(48).toString('base64url'),
  adminPassword: `${randomBytes(18).toString('base64url')}Aa1`,
});

const b64 = (value: string) => Buffer.from(value, 'utf8').toString('base64');

export function desiredGeneratedSecrets(kind: KindInfo, resource: ServiceResource, sources: SecretSources, values: GeneratedValues): KubeObject[] {
  const secrets: KubeObject[] = [];
  if (sources.session.generated) {
    secrets.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: childMeta(kind, resource, sources.session.name),
      type: 'Opaque',
      data: { [sources.session.key]: b64(values.sessionSecret) },
    });
  }
  if (sources.admin.generated) {
    secrets.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: childMeta(kind, resource, sources.admin.name),
      type: 'Opaque',
      data: { username: b64(resource.spec.auth.adminUsername), [sources.admin.key]: b64(values.adminPassword) },
    });
  }
  return secrets;
}
