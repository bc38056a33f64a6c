// Where each service of an installation keeps its data: database, schema and storage, taken from the same
// effective config `boxyard dev` / `serve all` would start it with (`devConfig`), so backup and restore never
// guess paths or names.
import type { BackupDescriptor } from '@boxyard/kit/backup.ts';
import type { StorageConfig } from '@boxyard/kit/config/common.ts';
import type { Installation } from '../run-all.ts';
import { services } from '../services.ts';
import { descriptorOf } from './descriptors.ts';

export interface ServiceTarget {
  name: string;
  descriptor: BackupDescriptor;
  databaseUrl: string;
  schema: string;
  storage: StorageConfig | undefined;
}

export interface TargetContext {
  installation: Installation;
  /** The installation's database (a service's config may name another). */
  databaseUrl: string;
  secret(name: string): Promise<string>;
}

/** The services that keep data, in start order; those the installation leaves out or without a database are skipped. */
export async function serviceTargets(context: TargetContext): Promise<ServiceTarget[]> {
  const targets: ServiceTarget[] = [];
  for (const service of services) {
    const overrides = context.installation.services?.[service.name];
    if (overrides === false) continue;
    const config = await service.devConfig({
      home: context.installation.home,
      databaseUrl: context.databaseUrl,
      secret: context.secret,
      adminPassword: process.env.BOXYARD_ADMIN_PASSWORD,
      overrides: overrides ?? {},
    });
    if (!config.database) continue; // keeps nothing (the second service)
    const descriptor = descriptorOf(service.name);
    if (!descriptor) throw new Error(`service ${service.name} keeps data in PostgreSQL but has no backup descriptor (src/backup.ts)`);
    if (!config.database.schema) throw new Error(`service ${service.name} has no database schema in its config`);
    targets.push({ name: service.name, descriptor, databaseUrl: config.database.url, schema: config.database.schema, storage: config.storage });
  }
  return targets;
}

/** Services grouped by database: each database is read in one snapshot and restored in one transaction. */
export function byDatabase(targets: readonly ServiceTarget[]): Map<string, ServiceTarget[]> {
  const groups = new Map<string, ServiceTarget[]>();
  for (const target of targets) groups.set(target.databaseUrl, [...(groups.get(target.databaseUrl) ?? []), target]);
  return groups;
}

/** Where to say a database is without printing its password. */
export function describeDatabase(url: string): string {
  const parsed = new URL(url);
  return `${parsed.host}${parsed.pathname}`;
}
