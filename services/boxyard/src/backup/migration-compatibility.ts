// A backup can be restored by this Boxyard when every migration it records is one this Boxyard has, unchanged.
// (This Boxyard may have newer ones: the service applies them at its next start, as after an upgrade.)
import type { BackupDescriptor } from '@boxyard/kit/backup.ts';
import { listMigrations } from '@boxyard/kit/db/migrate.ts';
import { BackupError } from './errors.ts';
import type { Manifest, ServiceRecord } from './manifest.ts';

export async function checkMigrations(manifest: Manifest, service: string, descriptor: BackupDescriptor, record: ServiceRecord): Promise<void> {
  const known = new Map((await listMigrations(descriptor.migrations)).map((m) => [m.id, m.checksum]));
  for (const { id, checksum } of record.migrations) {
    const ours = known.get(id);
    if (ours === undefined) {
      throw new BackupError(
        `${service}: the backup's schema has migration ${id}, which this Boxyard does not have: restore it with Boxyard ${manifest.boxyard_version} or newer`,
      );
    }
    if (ours !== checksum) throw new BackupError(`${service}: migration ${id} differs between the backup and this Boxyard (checksum ${checksum} vs ${ours})`);
  }
}
