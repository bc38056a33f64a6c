// The backup kinds as the operator reads them (the apiserver has filled in every default; crds.ts is the schema).
import type { Condition, KubeObject } from '@boxyard/kit/kube/types.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';

export const backupType = resources.backup;
export const scheduledBackupType = resources.scheduledBackup;

export interface BackupSource {
  kind: string;
  name: string;
}

export interface S3Destination {
  endpoint: string;
  bucket: string;
  region: string;
  prefix: string;
  credentialsSecretRef: { name: string; accessKeyKey: string; secretKeyKey: string };
}

export interface BackupDestination {
  s3: S3Destination;
}

export type BackupPhase = 'Pending' | 'Running' | 'Completed' | 'Failed';

export interface BackupStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  phase?: BackupPhase;
  jobName?: string;
  startedAt?: string;
  completedAt?: string;
  location?: string;
  size?: number;
  objectCount?: number;
  boxyardVersion?: string;
  error?: string;
}

export interface Backup extends KubeObject {
  spec: { source: BackupSource; destination: BackupDestination };
  status?: BackupStatus;
}

export interface ScheduledBackupStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  lastScheduleTime?: string;
  nextScheduleTime?: string;
  lastBackupName?: string;
}

export interface ScheduledBackup extends KubeObject {
  spec: {
    schedule: string;
    suspend: boolean;
    source: BackupSource;
    destination: BackupDestination;
    retention: { keepLast: number; maxAge?: string };
  };
  status?: ScheduledBackupStatus;
}

/** Label on the Backups a ScheduledBackup creates (its name). */
export const SCHEDULE_LABEL = 'boxyard.io/scheduled-backup';
/** Label on a Backup's Job (the Backup's name). */
export const BACKUP_LABEL = 'boxyard.io/backup';

/** Where a Backup writes: <prefix>/<namespace>/<name>, so two Backups never share a location. */
export const backupPath = (backup: Pick<Backup, 'metadata' | 'spec'>): string =>
  `${backup.spec.destination.s3.prefix}/${backup.metadata.namespace}/${backup.metadata.name}`;
export const backupLocation = (backup: Pick<Backup, 'metadata' | 'spec'>): string => `s3://${backup.spec.destination.s3.bucket}/${backupPath(backup)}`;
