// `boxyard restore <dir>`: a backup into an empty installation (a new BOXYARD_HOME, or --config naming an
// empty database and bucket). Order: prove the backup intact, refuse a target that holds anything, write the
// objects, then per database the backup's migrations and one transaction loading every table, and last the
// home's secrets.json, so a restore that fails half-way is undone and can simply be run again.
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ObjectStore } from '@boxyard/kit';
import { resolveInstallation } from '../host-config.ts';
import { secretsFile } from '../home.ts';
import { descriptorOf } from './descriptors.ts';
import { BackupError } from './errors.ts';
import { forEachLimited, writeFileAtomic } from './files.ts';
import { parseSecrets, readHomeSecrets, secretsFrom } from './home-secrets.ts';
import { openInstallationDatabase } from './installation-database.ts';
import { loadDatabase, type LoadItem } from './load-tables.ts';
import { readManifest, type Manifest, type ServiceRecord } from './manifest.ts';
import { checkMigrations } from './migration-compatibility.ts';
import { serviceTarget } from './service-source.ts';
import { byDatabase, describeDatabase, serviceTargets } from './service-targets.ts';
import { checkTargetIsEmpty, dropRestoredSchema, type CheckedTarget } from './target-checks.ts';
import { verifyBackup } from './verify-backup.ts';
import { ignoreError } from '@boxyard/kit';

export interface RestoreOptions {
  /** A host install's config file; without it, `boxyard dev`'s installation ($BOXYARD_HOME). With `service`: that service's serve config. */
  configFile?: string | undefined;
  /** Only this service of the backup, into the schema and storage of its serve config (a cluster's ConfigMap). */
  service?: string | undefined;
  log?: (line: string) => void;
}

export interface RestoreSummary {
  home: string;
  database: string;
  manifest: Manifest;
  restored: string[];
  /** Services in the backup that the target installation leaves out. */
  skipped: string[];
}

const OBJECT_CONCURRENCY = 4;

export async function restore(dir: string, options: RestoreOptions = {}): Promise<RestoreSummary> {
  const log = options.log ?? (() => {});
  const source = resolve(dir);
  const manifest = await readManifest(source);
  const verified = await verifyBackup(source, manifest);
  log(`backup verified: ${verified.files} files, ${verified.bytes} bytes, made ${manifest.created_at} by Boxyard ${manifest.boxyard_version}`);
  for (const [name, record] of Object.entries(manifest.services)) {
    const descriptor = descriptorOf(name);
    if (!descriptor) throw new BackupError(`the backup holds service ${name}, which this Boxyard does not have`);
    await checkMigrations(manifest, name, descriptor, record);
  }
  if (options.service) return restoreService(source, manifest, options.service, options.configFile, log);

  const backupSecrets = manifest.secrets ? await readFile(join(source, manifest.secrets.file), 'utf8') : undefined;
  const values = backupSecrets === undefined ? {} : parseSecrets(backupSecrets, `backup file ${manifest.secrets!.file}`);
  const installation = resolveInstallation(options.configFile);
  const existing = await readHomeSecrets(installation.home);
  // The same secrets as the backup's: an earlier run of this restore that failed later on (it is undone).
  if (existing.text !== undefined && existing.text !== backupSecrets) {
    throw new BackupError(
      `${secretsFile(installation.home)} exists: ${installation.home} belongs to an installation; restore into an empty BOXYARD_HOME (or a config whose home is new)`,
    );
  }
  const secretCount = Object.keys(values).length;
  const secret = secretsFrom(values);

  const database = await openInstallationDatabase(installation, { password: await secret('postgres_password'), create: true, log });
  let failed = true;
  try {
    const targets = await serviceTargets({ installation, databaseUrl: database.url, secret });
    const items: LoadItem[] = [];
    const skipped: string[] = [];
    for (const [name, record] of Object.entries(manifest.services)) {
      const target = targets.find((t) => t.name === name);
      if (target) items.push({ target, record });
      else skipped.push(name);
    }
    await restoreItems(items, source, log);

    // Last: the restored installation is complete once its secrets are in place. Secrets the backup lacked
    // (made up for a service it did not have) are added, never the other way round.
    await mkdir(installation.home, { recursive: true, mode: 0o755 });
    const text = backupSecrets !== undefined && Object.keys(values).length === secretCount ? backupSecrets : `${JSON.stringify(values, null, 2)}\n`;
    await writeFileAtomic(secretsFile(installation.home), text, 0o600);
    failed = false;
    return { home: installation.home, database: database.description, manifest, restored: items.map((i) => i.target.name), skipped };
  } finally {
    await database.close();
    // An embedded PostgreSQL this restore initialised would only stand in the way of the next attempt.
    if (failed && database.createdDataDir) await rm(database.createdDataDir, { recursive: true, force: true });
  }
}

/** One service (`--service`): no home and no secrets.json; the database must exist (a cluster's is made by its owner). */
async function restoreService(
  source: string,
  manifest: Manifest,
  service: string,
  configFile: string | undefined,
  log: (line: string) => void,
): Promise<RestoreSummary> {
  const target = serviceTarget(service, configFile);
  const record = manifest.services[service];
  if (!record) throw new BackupError(`the backup holds no ${service} (it has ${Object.keys(manifest.services).join(', ') || 'no service'})`);
  await restoreItems([{ target, record }], source, log);
  return {
    home: '-',
    database: describeDatabase(target.databaseUrl),
    manifest,
    restored: [service],
    skipped: Object.keys(manifest.services).filter((name) => name !== service),
  };
}

/** Refuses a target that holds anything, then writes objects and rows; a failure undoes exactly what it wrote. */
async function restoreItems(items: LoadItem[], source: string, log: (line: string) => void): Promise<void> {
  const checked: CheckedTarget[] = [];
  for (const { target } of items) checked.push(await checkTargetIsEmpty(target));
  const written: { store: ObjectStore; key: string }[] = [];
  try {
    for (const [index, { target, record }] of items.entries()) {
      const store = checked[index]!.store;
      if (record.objects.length === 0) continue;
      if (!store) throw new BackupError(`${target.name}: the backup has ${record.objects.length} objects, but the target's config has no storage`);
      await writeObjects(store, record, source, written);
    }
    for (const [url, group] of byDatabase(items.map((i) => i.target))) {
      await loadDatabase(
        url,
        items.filter((i) => group.includes(i.target)),
        source,
      );
    }
  } catch (error) {
    log('restore failed; undoing what it wrote');
    for (const { store, key } of written) await store.delete(key).catch(ignoreError('undoing a failed restore; its own error is the one reported'));
    for (const target of checked) await dropRestoredSchema(target).catch(ignoreError('undoing a failed restore; its own error is the one reported'));
    throw error;
  }
}

async function writeObjects(store: ObjectStore, record: ServiceRecord, source: string, written: { store: ObjectStore; key: string }[]): Promise<void> {
  await forEachLimited(record.objects, OBJECT_CONCURRENCY, async (object) => {
    // Same key as in the backup: the restored rows name it. The checksum is checked again on the way in.
    await store.put(object.key, createReadStream(join(source, object.file)), { expectedSha256: object.sha256 });
    written.push({ store, key: object.key });
  });
}
