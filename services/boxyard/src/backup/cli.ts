// `boxyard backup <dir>` and `boxyard restore <dir>`: run, print a summary, and turn a user's mistake (a
// non-empty target, a corrupted backup, an unreachable database) into one line and exit code 1.
import { ConfigError } from '@boxyard/kit';
import { backup } from './backup.ts';
import { BackupError } from './errors.ts';
import type { Manifest } from './manifest.ts';
import { restore } from './restore.ts';

const MiB = 1024 * 1024;

function serviceLines(manifest: Manifest): string[] {
  return Object.entries(manifest.services).map(([name, s]) => {
    const rows = s.tables.reduce((n, t) => n + t.rows, 0);
    const bytes = s.objects.reduce((n, o) => n + o.size, 0);
    return `  ${name.padEnd(15)} ${s.tables.length} tables, ${rows} rows, ${s.objects.length} objects (${(bytes / MiB).toFixed(1)} MiB)`;
  });
}

export async function backupCli(command: 'backup' | 'restore', dir: string, configFile: string | undefined): Promise<void> {
  const started = Date.now();
  const label = `boxyard ${command}`;
  const log = (line: string) => console.log(`${label}: ${line}`);
  try {
    if (command === 'backup') {
      const result = await backup(dir, { configFile, log });
      console.log(`${label}: wrote ${result.dir}`);
      for (const line of serviceLines(result.manifest)) console.log(line);
      if (result.manifest.secrets) console.log(`  secrets.json    included: the backup holds the installation's secrets, keep it private`);
      if (result.snapshots.some((n) => n > 1)) console.log(`  snapshots       ${result.snapshots.join(', ')} (objects were deleted while copying)`);
    } else {
      const result = await restore(dir, { configFile, log });
      console.log(`${label}: restored into ${result.home} (database ${result.database})`);
      for (const line of serviceLines(result.manifest).filter((l) => result.restored.some((name) => l.startsWith(`  ${name} `)))) console.log(line);
      for (const name of result.skipped) console.log(`  ${name.padEnd(15)} not restored: the target installation leaves it out`);
      console.log(`  Start it as usual; each service applies migrations newer than the backup's at its start.`);
    }
    console.log(`${label}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    if (error instanceof BackupError || error instanceof ConfigError) {
      console.error(`${label}: ${error.message}`);
      process.exitCode = error instanceof ConfigError ? 2 : 1; // a bad --config file is a usage error, as for serve
      return;
    }
    console.error(`${label}: failed: ${(error as Error).message}`);
    console.error((error as Error).stack);
    process.exitCode = 1;
  }
}
