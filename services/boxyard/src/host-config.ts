// The one config file of a host install (`boxyard serve all --config /etc/boxyard/boxyard.yaml`), and the same
// description of `boxyard dev`'s installation, so that backup and restore find any Boxyard's data the same way.
import { ConfigError, loadConfig } from '@boxyard/kit';
import { z } from 'zod';
import { DEFAULT_EMBEDDED_POSTGRES_PORT, resolveHome } from './home.ts';
import type { Installation } from './run-all.ts';
import { services } from './services.ts';

const serviceNames = services.map((s) => s.name) as [string, ...string[]];

export const hostConfigSchema = z.strictObject({
  /** State: generated secrets, the embedded PostgreSQL's data, local storage. systemd's StateDirectory by default. */
  home: z.string().min(1).default(() => process.env.STATE_DIRECTORY?.split(':')[0] ?? '/var/lib/boxyard'),
  database: z
    .union([
      z.strictObject({ url: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL') }),
      z.strictObject({ embedded: z.strictObject({ port: z.number().int().min(1).max(65535).default(DEFAULT_EMBEDDED_POSTGRES_PORT) }).prefault({}) }),
    ])
    .prefault({ embedded: {} }),
  /** Each service's own config keys (as for `boxyard serve <service>`) over the embedded defaults; `false` leaves it out. */
  services: z.partialRecord(z.enum(serviceNames), z.union([z.literal(false), z.record(z.string(), z.unknown())])).default({}),
});

export type HostConfig = z.output<typeof hostConfigSchema>;

/** A host config file; only `BOXYARD_HOME` and the file's own keys apply (services read their BOXYARD_* keys). */
export function loadHostConfig(file: string): Installation {
  const config = loadConfig(hostConfigSchema, { file, env: {} });
  const home = resolveHome(process.env.BOXYARD_HOME ?? config.home);
  if (!home.startsWith('/')) throw new ConfigError(`config: home: must be an absolute path`);
  return { home, database: config.database, services: config.services as Installation['services'] };
}

/** `boxyard dev`: state in $BOXYARD_HOME (default ./.boxyard), embedded PostgreSQL on $BOXYARD_DEV_POSTGRES_PORT. */
export function devInstallation(): Installation {
  return { home: resolveHome(), database: { embedded: { port: Number(process.env.BOXYARD_DEV_POSTGRES_PORT ?? DEFAULT_EMBEDDED_POSTGRES_PORT) } } };
}

/** The installation a command acts on: the host config when `--config` is given, else `boxyard dev`'s. */
export const resolveInstallation = (configFile: string | undefined): Installation => (configFile ? loadHostConfig(configFile) : devInstallation());
