// Restore's first step: every file the manifest lists must be there with its exact size and sha256, before a
// single byte goes into the target. A mismatch names the file, so the user knows which copy went bad.
import { join } from 'node:path';
import { BackupError } from './errors.ts';
import { digestFile } from './files.ts';
import { manifestFiles, type Manifest } from './manifest.ts';

export async function verifyBackup(dir: string, manifest: Manifest): Promise<{ files: number; bytes: number }> {
  let bytes = 0;
  const files = manifestFiles(manifest);
  for (const record of files) {
    let actual;
    try {
      actual = await digestFile(join(dir, record.file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BackupError(`backup file ${record.file} is missing: the backup is incomplete`);
      throw error;
    }
    if (actual.size !== record.size || actual.sha256 !== record.sha256) {
      throw new BackupError(
        `backup file ${record.file} is corrupted: ${actual.size} bytes with sha256 ${actual.sha256}, the manifest says ${record.size} bytes with sha256 ${record.sha256}`,
      );
    }
    bytes += actual.size;
  }
  return { files: files.length, bytes };
}
