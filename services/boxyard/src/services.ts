// The services the `boxyard` command can run, each with its config schema and how to start it.
import { loadConfig } from '@boxyard/kit';
import { secondServiceConfigSchema, startSecondService } from '@boxyard/second-service';

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

export const services: ServiceDefinition[] = [
  {
    name: 'second-service',
    async serve(configFile) {
      const running = await startSecondService(loadConfig(secondServiceConfigSchema, { file: configFile }));
      return { name: 'second-service', ...running };
    },
    async dev(context) {
      const config = loadConfig(secondServiceConfigSchema, { defaults: { state_dir: `${context.home}/tls` } });
      const running = await startSecondService(config);
      return { name: 'second-service', ...running };
    },
  },
];

export const findService = (name: string) => services.find((s) => s.name === name);
