// How the `boxyard` command runs a service: from a config file (`serve`) or with embedded defaults (`dev`).
// Each service exports a `serviceDefinition`; the CLI only lists them.

export interface RunningService {
  name: string;
  url: string;
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
}

export interface ServiceDefinition {
  name: string;
  /** Starts from a config file and the environment (`boxyard serve`). */
  serve(configFile: string | undefined): Promise<RunningService>;
  /** Starts with embedded defaults on one machine (`boxyard dev`). */
  dev(context: DevContext): Promise<RunningService>;
}
