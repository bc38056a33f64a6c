// `--service <name> --config FILE`: one service's data, found through the same config file `boxyard serve <name>`
// starts it with (a cluster's ConfigMap and mounted Secrets): its database schema and its storage. No home and no
// secrets.json are involved: in a cluster the secrets live in Kubernetes Secrets.
import { loadConfig } from '@boxyard/kit';
import type { ServiceConfigBase } from '@boxyard/kit/service-definition.ts';
import { findService, services } from '../services.ts';
import { descriptorOf } from './descriptors.ts';
import { BackupError } from './errors.ts';
import type { ServiceTarget } from './service-targets.ts';

export function serviceTarget(name: string, configFile: string | undefined): ServiceTarget {
  const service = findService(name);
  const descriptor = descriptorOf(name);
  if (!service || !descriptor) {
    const keeping = services.filter((s) => descriptorOf(s.name)).map((s) => s.name);
    throw new BackupError(`--service ${name}: not a service that keeps data; one of: ${keeping.join(', ')}`);
  }
  if (!configFile) throw new BackupError(`--service ${name} needs --config: the file \`boxyard serve ${name}\` starts it with`);
  const config = loadConfig(service.config, { file: configFile }) as ServiceConfigBase;
  if (!config.database) throw new BackupError(`${name}: its config (${configFile}) has no database`);
  if (!config.database.schema)
    throw new BackupError(`${name}: its config (${configFile}) has no database.schema: backup and restore need the schema the service uses`);
  return { name, descriptor, databaseUrl: config.database.url, schema: config.database.schema, storage: config.storage };
}
