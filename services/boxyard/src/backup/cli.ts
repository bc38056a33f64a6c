// `boxyard backup <dir|s3://bucket/prefix>` and `boxyard restore <dir|s3://bucket/prefix>`: run, print a summary,
// and turn a user's mistake (a non-empty target, a corrupted backup, a newer Boxyard's backup, an unreachable
// database or bucket) into one line and exit code 1. `--result-file` writes what a Kubernetes Job reports (the
// pod's termination message, read by the operator into the Backup's status).
import { writeFile } from 'node:fs/promises';
import { ConfigError } from '@boxyard/kit';
import { backup } from './backup.ts';
import { BackupError } from './errors.ts';
import type { Manifest } from './manifest.ts';
import { restore } from './restore.ts';
import { backupToS3, restoreFromS3 } from './s3-backup.ts';
import { isS3Location, parseS3Location } from './s3-location.ts';

const MiB = 1024 * 1024;

export interface BackupCliOptions {
  configFile?: string | undefined;
  service?: string | undefined;
  resultFile?: string | undefined;
}

/** What `--result-file` holds (one line of JSON, well under the 4096 bytes of a termination message). */
export interface BackupResult {
  ok: boolean;
  location?: string;
  bytes?: number;
  objects?: number;
  boxyard_version?: string;
  created_at?: string;
  error?: string;
}

function serviceLines(manifest: Manifest): string[] {
  return Object.entries(manifest.services).map(([name, s]) => {
    const rows = s.tables.reduce((n, t) => n + t.rows, 0);
    const bytes = s.objects.reduce((n, o) => n + o.size, 0);
    return `  ${name.padEnd(15)} ${s.tables.length} tables, ${rows} rows, ${s.objects.length} objects (${(bytes / MiB).toFixed(1)} MiB)`;
  });
}

const objectCount = (manifest: Manifest) => Object.values(manifest.services).reduce((n, s) => n + s.objects.length, 0);

async function writeResult(file: string | undefined, result: BackupResult): Promise<void> {
  if (!file) return;
  const line = JSON.stringify({ ...result, ...(result.error ? { error: result.error.slice(0, 2000) } : {}) });
  await writeFile(file, `${line}\n`).catch((error: unknown) => console.error(`cannot write ${file}: ${(error as Error).message}`));
}

export async function backupCli(command: 'backup' | 'restore', location: string, cli: BackupCliOptions): Promise<void> {
  const started = Date.now();
  const label = `boxyard ${command}`;
  const log = (line: string) => console.log(`${label}: ${line}`);
  const options = { configFile: cli.configFile, service: cli.service, log };
  try {
    if (command === 'backup') {
      const s3 = isS3Location(location) ? parseS3Location(location) : undefined;
      const uploaded = s3 ? await backupToS3(s3, options) : undefined;
      const result = uploaded ?? (await backup(location, options));
      const where = uploaded ? uploaded.location : result.dir;
      console.log(`${label}: wrote ${where}`);
      for (const line of serviceLines(result.manifest)) console.log(line);
      if (result.manifest.secrets) console.log(`  secrets.json    included: the backup holds the installation's secrets, keep it private`);
      if (result.snapshots.some((n) => n > 1)) console.log(`  snapshots       ${result.snapshots.join(', ')} (objects were deleted while copying)`);
      const bytes = uploaded?.bytes;
      await writeResult(cli.resultFile, {
        ok: true,
        location: where,
        ...(bytes !== undefined ? { bytes } : {}),
        objects: objectCount(result.manifest),
        boxyard_version: result.manifest.boxyard_version,
        created_at: result.manifest.created_at,
      });
    } else {
      const s3 = isS3Location(location) ? parseS3Location(location) : undefined;
      const result = s3 ? await restoreFromS3(s3, options) : await restore(location, options);
      console.log(`${label}: restored into ${cli.service ? `${cli.service}'s schema and storage` : result.home} (database ${result.database})`);
      for (const line of serviceLines(result.manifest).filter((l) => result.restored.some((name) => l.startsWith(`  ${name} `)))) console.log(line);
      for (const name of result.skipped)
        console.log(`  ${name.padEnd(15)} not restored: ${cli.service ? 'not the service asked for' : 'the target installation leaves it out'}`);
      console.log(`  Start it as usual; each service applies migrations newer than the backup's at its start.`);
      await writeResult(cli.resultFile, {
        ok: true,
        location,
        objects: objectCount(result.manifest),
        boxyard_version: result.manifest.boxyard_version,
        created_at: result.manifest.created_at,
      });
    }
    console.log(`${label}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    if (error instanceof BackupError || error instanceof ConfigError) {
      console.error(`${label}: ${error.message}`);
      await writeResult(cli.resultFile, { ok: false, location, error: error.message });
      process.exitCode = error instanceof ConfigError ? 2 : 1; // a bad --config file is a usage error, as for serve
      return;
    }
    console.error(`${label}: failed: ${(error as Error).message}`);
    console.error((error as Error).stack);
    await writeResult(cli.resultFile, { ok: false, location, error: `failed: ${(error as Error).message}` });
    process.exitCode = 1;
  }
}
