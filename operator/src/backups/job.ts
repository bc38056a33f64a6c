// The Job of a Backup: one pod from the source resource's image, with the source's config (its ConfigMap) and
// Secrets mounted exactly as its Deployment mounts them, running `boxyard backup s3://… --service <service>`.
// The destination's keys come from their Secret as AWS_* variables. The CLI writes its result (location, size,
// object count, or the error) to the termination message, which the Backup reconciler reads into the status.
import type { Job } from 'kubernetes-types/batch/v1.d.ts';
import type { ServiceResource } from '../crds/types.ts';
import { CONFIG_FILE, MANAGED_BY, RUN_AS_USER, SECRETS_DIR, asObject, childName, secretSources } from '../desired/common.ts';
import { resourceRequirements, secretProjections } from '../desired/deployment.ts';
import type { KindInfo } from '../desired/kinds.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { BACKUP_LABEL, backupLocation, type Backup } from './types.ts';

export const jobName = (backup: Backup): string => `${backup.metadata.name}-backup`;

export interface BackupJobInput {
  backup: Backup;
  kind: KindInfo;
  source: ServiceResource;
  image: string;
  /** `backup` (a Backup's Job) or `restore` (a bootstrap's). */
  command?: 'backup' | 'restore';
  location?: string;
  name?: string;
  /** The Job's controlling owner: the Backup, or the resource a restore bootstraps. */
  owner?: KubeObject;
}

export function desiredBackupJob({
  backup,
  kind,
  source,
  image,
  command = 'backup',
  location = backupLocation(backup),
  name = jobName(backup),
  owner = backup,
}: BackupJobInput): KubeObject {
  const s3 = backup.spec.destination.s3;
  const keyRef = (key: string) => ({ secretKeyRef: { name: s3.credentialsSecretRef.name, key } });
  const job: Job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: source.metadata.namespace,
      labels: {
        'app.kubernetes.io/managed-by': MANAGED_BY,
        'app.kubernetes.io/part-of': 'boxyard',
        'app.kubernetes.io/component': command,
        [BACKUP_LABEL]: backup.metadata.name,
      },
      ownerReferences: [
        {
          apiVersion: owner.apiVersion,
          kind: owner.kind,
          name: owner.metadata.name,
          uid: owner.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      // Once: a failed backup is reported, not retried behind the user's back (a new Backup retries it).
      backoffLimit: 0,
      template: {
        metadata: { labels: { 'app.kubernetes.io/managed-by': MANAGED_BY, [BACKUP_LABEL]: backup.metadata.name } },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUN_AS_USER,
            runAsGroup: RUN_AS_USER,
            fsGroup: RUN_AS_USER,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          ...(source.spec.imagePullSecrets?.length ? { imagePullSecrets: source.spec.imagePullSecrets.map((s) => ({ name: s.name })) } : {}),
          containers: [
            {
              name: command,
              image,
              imagePullPolicy: source.spec.imagePullPolicy,
              args: [command, location, '--service', kind.service, '--config', CONFIG_FILE, '--result-file', '/dev/termination-log'],
              env: [
                { name: 'AWS_ENDPOINT_URL', value: s3.endpoint },
                { name: 'AWS_REGION', value: s3.region },
                { name: 'AWS_ACCESS_KEY_ID', valueFrom: keyRef(s3.credentialsSecretRef.accessKeyKey) },
                { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: keyRef(s3.credentialsSecretRef.secretKeyKey) },
              ],
              resources: resourceRequirements(source.spec.resources),
              terminationMessagePolicy: 'FallbackToLogsOnError',
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              volumeMounts: [
                { name: 'config', mountPath: CONFIG_FILE, subPath: 'config.yaml', readOnly: true },
                { name: 'secrets', mountPath: SECRETS_DIR, readOnly: true },
                // The backup is staged here before it is uploaded: as large as the data (no size limit).
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'config', configMap: { name: `${childName(kind, source.metadata.name)}-config`, items: [{ key: 'config.yaml', path: 'config.yaml' }] } },
            { name: 'secrets', projected: { defaultMode: 0o440, sources: secretProjections(secretSources(kind, source)) } },
            { name: 'tmp', emptyDir: {} },
          ],
        },
      },
    },
  };
  return asObject(job);
}
