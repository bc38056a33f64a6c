// How the `boxyard` command runs a service: from a config file (`serve`) or with embedded defaults (`dev`).
// Each service exports a `serviceDefinition`; the CLI only lists them.
import type { DatabaseConfig, StorageConfig } from './config/common.ts';

export interface RunningService {
  name: string;
  url: string;
  /** /metrics, on its own listener (never the public port). */
  metricsUrl?: string;
  close(): Promise<void>;
}

export interface DevContext {
  /** $BOXYARD_HOME (default ./.boxyard): put the service's state under `${home}/<service>`. */
  home: string;
  /** URL of the `boxyard` database on the embedded PostgreSQL; each service uses its own schema in it. */
  databaseUrl: string;
  /** A named secret, generated on first use and kept in `${home}/secrets.json` (0600) across restarts. */
  secret(name: string): Promise<string>;
  /** The first admin's password when BOXYARD_ADMIN_PASSWORD is set; otherwise services generate and print one. */
  adminPassword: string | undefined;
  /** The service's own config keys from `boxyard serve all`'s file, merged over the embedded defaults. */
  overrides?: Record<string, unknown>;
}

export interface ServiceDefinition {
  name: string;
  /** Starts from a config file and the environment (`boxyard serve`). */
  serve(configFile: string | undefined): Promise<RunningService>;
  /** The config `dev` starts from (embedded defaults, then overrides, then the environment); backup reads it. */
  devConfig(context: DevContext): Promise<ServiceConfigBase>;
  /** Starts with embedded defaults on one machine (`boxyard dev`, `boxyard serve all`). */
  dev(context: DevContext): Promise<RunningService>;
}

/** What every service's config may hold that tools outside the service (backup, restore) need. */
export interface ServiceConfigBase {
  database?: DatabaseConfig;
  storage?: StorageConfig;
  [key: string]: unknown;
}
