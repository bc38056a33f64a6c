// Each service's backup descriptor, declared beside the service (src/backup.ts in each of them) and listed with it
// in the registry; the host migrates exactly these, so what a backup restores is what the service runs on.
import type { BackupDescriptor } from '@boxyard/kit/backup.ts';
import { services } from '../services.ts';

export const backupDescriptors: readonly BackupDescriptor[] = services.flatMap((service) => (service.backup ? [service.backup] : []));

export const descriptorOf = (service: string) => backupDescriptors.find((d) => d.service === service);
