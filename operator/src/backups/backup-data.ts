// Deleting a pruned Backup's files in S3: every key under its location, with the keys of its destination's
// Secret (read when needed, never cached).
import { createObjectStore } from '@boxyard/kit';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { backupPath, type Backup } from './types.ts';

export async function deleteBackupData(client: Pick<KubeClient, 'get'>, backup: Backup): Promise<number> {
  const s3 = backup.spec.destination.s3;
  const ref = s3.credentialsSecretRef;
  const secret = await client.get<KubeObject & { data?: Record<string, string> }>(resources.secret, backup.metadata.namespace, ref.name);
  const value = (key: string) => {
    const encoded = secret?.data?.[key];
    if (!encoded) throw new Error(`Secret ${ref.name} has no key ${key}`);
    return Buffer.from(encoded, 'base64').toString('utf8');
  };
  const store = createObjectStore({
    driver: 's3',
    endpoint: s3.endpoint,
    access_key: value(ref.accessKeyKey),
    secret_key: value(ref.secretKeyKey),
    bucket: s3.bucket,
    region: s3.region,
    prefix: '',
  });
  return store.deletePrefix(`${backupPath(backup)}/`);
}
