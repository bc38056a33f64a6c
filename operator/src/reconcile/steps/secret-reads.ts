// Reading the Secrets a resource references: their metadata from the cache (which holds no values), their values
// from the API only when a check needs one. A missing Secret or key fails with a reason a person can act on.
import { CheckFailure } from '../../checks/check-failure.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import type { ObjectCache, ReconcileClient } from './step-inputs.ts';

type SecretObject = KubeObject & { data?: Record<string, string> };

/** What reading Secrets takes: the client, and the metadata-only cache of the Secrets. */
export interface SecretReader {
  client: ReconcileClient;
  secrets: Pick<ObjectCache, 'get'>;
}

/** The metadata of a Secret: from the cache, or (the cache may lag a Secret created a moment ago) the API. */
export async function secretMeta(reader: SecretReader, namespace: string, name: string): Promise<KubeObject | undefined> {
  return reader.secrets.get(namespace, name) ?? (await reader.client.get(resources.secret, namespace, name, { metadataOnly: true }));
}

/** A value of a referenced Secret; fails with an actionable reason when the Secret or its key is missing. */
export async function secretValue(client: ReconcileClient, namespace: string, name: string, key: string, field: string): Promise<string> {
  const secret = await client.get<SecretObject>(resources.secret, namespace, name);
  if (!secret)
    throw new CheckFailure('SecretNotFound', `Secret "${name}" (${field}) does not exist in namespace "${namespace}": create it with the key "${key}"`);
  const value = secret.data?.[key];
  if (value === undefined) {
    const present = Object.keys(secret.data ?? {});
    throw new CheckFailure(
      'SecretKeyMissing',
      `Secret "${name}" (${field}) has no key "${key}"${present.length ? ` (it has: ${present.join(', ')})` : ' (it is empty)'}: add the key, or name another one in ${field}.key`,
    );
  }
  return Buffer.from(value, 'base64')
    .toString('utf8')
    .replace(/\r?\n$/, '');
}
