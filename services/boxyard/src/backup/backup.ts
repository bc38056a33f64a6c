// `boxyard backup <dir>`: a consistent copy of an installation while its services keep running. Per database,
// one snapshot (snapshot.ts) and then the objects its rows name; an object deleted after the snapshot makes us
// take a new snapshot and copy only what is still missing. Everything is written into a hidden sibling of <dir>
// and renamed into place at the end, so a failed backup never leaves something that looks like a backup.
import { rmSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { createObjectStore, type ObjectStore } from '@boxyard/kit';
import { resolveInstallation } from '../host-config.ts';
import { copyObjects } from './copy-objects.ts';
import { BackupError } from './errors.ts';
import { isMissingOrEmptyDirectory, syncDirectory, writeStreamToFile } from './files.ts';
import { readHomeSecrets, secretsFrom } from './home-secrets.ts';
import { openInstallationDatabase } from './installation-database.ts';
import { FORMAT, FORMAT_VERSION, MANIFEST_FILE, type Manifest, type ObjectRecord, type ServiceRecord } from './manifest.ts';
import { byDatabase, describeDatabase, serviceTargets, type ServiceTarget } from './service-targets.ts';
import { serviceTarget } from './service-source.ts';
import { takeSnapshot } from './snapshot.ts';
import { BOXYARD_VERSION } from './version.ts';

export interface BackupOptions {
  /** A host install's config file; without it, `boxyard dev`'s installation. With `service`: that service's serve config. */
  configFile?: string | undefined;
  /** Only this service, found through its own config file (a cluster's ConfigMap): no home, no secrets.json. */
  service?: string | undefined;
  log?: (line: string) => void;
  /** How many snapshots to take per database before giving up on objects that keep disappearing. */
  maxSnapshots?: number;
  /** Tests: runs after each snapshot, before its objects are copied (to delete one in between). */
  afterSnapshot?: (attempt: number) => Promise<void>;
}

export interface BackupSummary {
  dir: string;
  manifest: Manifest;
  /** Snapshots taken, per database. */
  snapshots: number[];
}

const TABLES_DIR = 'tables';
const OBJECTS_DIR = 'objects';
const SECRETS_FILE = 'secrets.json';

export async function backup(dir: string, options: BackupOptions = {}): Promise<BackupSummary> {
  const log = options.log ?? (() => {});
  const target = resolve(dir);
  if (!(await isMissingOrEmptyDirectory(target))) throw new BackupError(`${target} exists and is not empty: give a new or empty directory`);
  const source = await openSource(options, log);

  const staging = join(dirname(target), `.${basename(target)}.partial-${process.pid}`);
  try {
    await mkdir(dirname(target), { recursive: true });
    await mkdir(staging, { mode: 0o700 }); // a backup holds secrets: private from the start
  } catch (error) {
    await source.close();
    throw error;
  }
  // Ctrl-C mid-way: no half backup left behind either.
  const interrupted = (signal: NodeJS.Signals) => {
    rmSync(staging, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const forget = async () => {
    process.removeListener('SIGINT', interrupted);
    process.removeListener('SIGTERM', interrupted);
    await rm(staging, { recursive: true, force: true });
  };
  try {
    const { targets } = source;
    const services: Record<string, ServiceRecord> = {};
    const snapshots: number[] = [];
    let postgresVersion: string | undefined;
    for (const [url, group] of byDatabase(targets)) {
      const result = await backupDatabase(url, group, staging, options, log);
      Object.assign(services, result.services);
      snapshots.push(result.snapshots);
      postgresVersion ??= result.postgresVersion;
    }
    const secretsRecord =
      source.secretsText === undefined
        ? null
        : { file: SECRETS_FILE, ...(await writeStreamToFile(join(staging, SECRETS_FILE), Readable.from([Buffer.from(source.secretsText)]), 0o600)) };
    const manifest: Manifest = {
      format: FORMAT,
      format_version: FORMAT_VERSION,
      boxyard_version: BOXYARD_VERSION,
      created_at: new Date().toISOString(),
      ...(postgresVersion ? { postgres_version: postgresVersion } : {}),
      secrets: secretsRecord,
      services,
    };
    // The manifest last: a directory with a manifest has everything the manifest lists.
    await writeFile(join(staging, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600, flush: true });
    await syncDirectory(staging);
    await rename(staging, target); // over an empty directory too
    await syncDirectory(dirname(target));
    return { dir: target, manifest, snapshots };
  } finally {
    await forget(); // a failed backup's files; after the rename there is nothing left to remove
    await source.close();
  }
}

interface BackupSource {
  targets: ServiceTarget[];
  /** The home's secrets.json (an installation's backup), copied verbatim. */
  secretsText: string | undefined;
  close(): Promise<void>;
}

/** What to back up: one service from its serve config (`--service`), or a whole installation with its secrets. */
async function openSource(options: BackupOptions, log: (line: string) => void): Promise<BackupSource> {
  if (options.service) {
    const target = serviceTarget(options.service, options.configFile);
    log(`service ${target.name}: schema ${target.schema} in ${describeDatabase(target.databaseUrl)}`);
    return { targets: [target], secretsText: undefined, close: async () => {} };
  }
  const installation = resolveInstallation(options.configFile);
  const secrets = await readHomeSecrets(installation.home);
  if ('embedded' in installation.database && !secrets.values.postgres_password) {
    throw new BackupError(
      `${installation.home} has no secrets.json with the embedded PostgreSQL's password: it is not a Boxyard home (set BOXYARD_HOME or --config)`,
    );
  }
  const database = await openInstallationDatabase(installation, { password: secrets.values.postgres_password ?? '', create: false, log });
  try {
    log(`database: ${database.description}`);
    const targets = await serviceTargets({ installation, databaseUrl: database.url, secret: secretsFrom({ ...secrets.values }) });
    return { targets, secretsText: secrets.text, close: () => database.close() };
  } catch (error) {
    await database.close();
    throw error;
  }
}

async function backupDatabase(url: string, group: ServiceTarget[], staging: string, options: BackupOptions, log: (line: string) => void) {
  const maxSnapshots = options.maxSnapshots ?? 5;
  const stores = new Map<string, ObjectStore>();
  for (const target of group) if (target.storage) stores.set(target.name, createObjectStore(target.storage));
  // Objects copied so far, per service, kept across snapshots.
  const copied = new Map<string, Map<string, ObjectRecord>>(group.map((t) => [t.name, new Map()]));
  for (let attempt = 1; ; attempt++) {
    const snapshot = await takeSnapshot(url, group, staging, TABLES_DIR);
    await options.afterSnapshot?.(attempt);
    let missing = 0;
    for (const [name, service] of snapshot.services) {
      if (service.keys.size === 0) continue;
      const store = stores.get(name);
      if (!store) throw new Error(`${name}: its rows name stored objects, but its config has no storage`);
      missing += (await copyObjects(store, service.keys, staging, join(OBJECTS_DIR, name), copied.get(name)!)).missing.length;
    }
    if (missing === 0) {
      const services: Record<string, ServiceRecord> = {};
      for (const [name, service] of snapshot.services) {
        const have = copied.get(name)!;
        // Objects copied for an earlier snapshot that this one no longer names: no orphans in a backup.
        for (const [key, record] of have) {
          if (service.keys.has(key)) continue;
          await rm(join(staging, record.file), { force: true });
          have.delete(key);
        }
        const { schema, migrations, tables, sequences } = service;
        services[name] = { schema, migrations, tables, sequences, objects: [...have.values()].sort((a, b) => (a.key < b.key ? -1 : 1)) };
      }
      return { services, snapshots: attempt, postgresVersion: snapshot.postgresVersion };
    }
    if (attempt >= maxSnapshots) {
      throw new BackupError(
        `objects named by ${describeDatabase(url)} kept disappearing during the backup (${maxSnapshots} snapshots): is something deleting files in bulk? Try again later`,
      );
    }
    log(`${missing} object(s) were deleted after the snapshot of ${describeDatabase(url)} (files replaced or removed meanwhile): taking a new snapshot`);
  }
}
