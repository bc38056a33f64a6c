// The one config file of a host install (`boxyard serve all --config /etc/boxyard/boxyard.yaml`), and the same
// description of `boxyard dev`'s installation, so that backup and restore find any Boxyard's data the same way.
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { ConfigError, loadConfig } from '@boxyard/kit';
import { z } from 'zod';
import { DEFAULT_EMBEDDED_POSTGRES_PORT, resolveHome } from './home.ts';
import type { Installation } from './run-all.ts';
import { services } from './services.ts';

/** Where `boxyard serve all` looks without `--config`; a missing file there means every default. */
export const DEFAULT_HOST_CONFIG = '/etc/boxyard/boxyard.yaml';

const serviceNames = services.map((s) => s.name) as [string, ...string[]];
const absolutePath = z.string().min(1).refine(isAbsolute, 'must be an absolute path');

// A key left empty in YAML (`terminal:` with every child commented out) reads as null: it counts as not written.
// (`.nullish()` rather than a preprocess step, so that `database.url_file` still finds the key it stands for.)
export const hostConfigSchema = z.strictObject({
  /** State: generated secrets, the embedded PostgreSQL's data, local storage. systemd's StateDirectory by default. */
  home: absolutePath.default(() => process.env.STATE_DIRECTORY?.split(':')[0] ?? '/var/lib/boxyard'),
  /** External (`url`, or `url_file`) or embedded (default): a PostgreSQL under the home, on 127.0.0.1:`port`. */
  database: z
    .strictObject({
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
        .optional(),
      embedded: z.strictObject({ port: z.number().int().min(1).max(65535).optional() }).nullish(),
    })
    .refine((database) => !(database.url && database.embedded !== undefined), 'either url (external) or embedded, not both')
    .nullish(),
  /**
   * Each service's own config keys (as for `boxyard serve <service>`) over the embedded defaults; `false` leaves it
   * out, an empty entry (or `true`) runs it with the defaults. Unknown service names are refused.
   */
  services: z
    .partialRecord(
      z.enum(serviceNames),
      z.union([z.boolean(), z.null(), z.record(z.string(), z.unknown())], "must be false, true or a mapping of the service's config keys"),
    )
    .nullish(),
});

export type HostConfig = z.output<typeof hostConfigSchema>;

export interface LoadHostConfigOptions {
  /** The default path was not given explicitly: a missing file then means every default. */
  missingOk?: boolean;
}

/**
 * A host config file. `BOXYARD_HOME` overrides `home` (the environment wins over the file, as for every key);
 * services' own BOXYARD_* keys are read by each service and therefore apply to every service alike.
 */
export function loadHostConfig(file: string, options: LoadHostConfigOptions = {}): Installation {
  const read = options.missingOk && !existsSync(file) ? undefined : file;
  const config = loadConfig(hostConfigSchema, { file: read, env: {} });
  const fromEnv = process.env.BOXYARD_HOME;
  if (fromEnv && !isAbsolute(fromEnv)) throw new ConfigError('config: BOXYARD_HOME: must be an absolute path');
  const database = config.database?.url
    ? { url: config.database.url }
    : { embedded: { port: config.database?.embedded?.port ?? DEFAULT_EMBEDDED_POSTGRES_PORT } };
  const chosen = Object.entries(config.services ?? {}).map(([name, value]) => [name, value === false ? false : value === true || !value ? {} : value]);
  return { home: resolveHome(fromEnv || config.home), database, services: Object.fromEntries(chosen) as Installation['services'] };
}

/**
 * `boxyard dev`: state in $BOXYARD_HOME (default ./.boxyard), embedded PostgreSQL on $BOXYARD_DEV_POSTGRES_PORT.
 * On loopback, for the person at this machine: the box repository's sign-up is open (a host install's and a
 * cluster's default is `invited`); BOXYARD_AUTH__SIGN_UP still wins.
 */
export function devInstallation(): Installation {
  return {
    home: resolveHome(),
    database: { embedded: { port: Number(process.env.BOXYARD_DEV_POSTGRES_PORT ?? DEFAULT_EMBEDDED_POSTGRES_PORT) } },
    services: { 'box-repository': { auth: { sign_up: 'open' } } },
  };
}

/** The installation a command acts on: the host config when `--config` is given, else `boxyard dev`'s. */
export const resolveInstallation = (configFile: string | undefined): Installation => (configFile ? loadHostConfig(configFile) : devInstallation());
