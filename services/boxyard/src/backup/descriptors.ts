// Each service's backup descriptor, declared beside the service (src/backup.ts in each of them).
import { boxRepositoryBackup } from '@boxyard/box-repository/backup.ts';
import { fileShareBackup } from '@boxyard/file-share/backup.ts';
import type { BackupDescriptor } from '@boxyard/kit/backup.ts';
import { terminalBackup } from '@boxyard/terminal/backup.ts';

export const backupDescriptors: readonly BackupDescriptor[] = [boxRepositoryBackup, fileShareBackup, terminalBackup];

export const descriptorOf = (service: string) => backupDescriptors.find((d) => d.service === service);
