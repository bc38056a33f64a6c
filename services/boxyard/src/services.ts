// The services the `boxyard` command can run, each with its config schema and how to start it.
import { loadConfig } from '@boxyard/kit';
import { secondServiceConfigSchema, startSecondService } from '@boxyard/second-service';

export interface RunningService {
  name: string;
  url: string;
  close(): Promise<void>;
}

export interface DevContext {
  home: string;
  postgresAdminUrl: string;
  secrets: Record<string, string>;
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
