// The second service as the `boxyard` command runs it.
import { loadConfig } from '@boxyard/kit';
import type { ServiceDefinition } from '@boxyard/kit/service-definition.ts';
import { startSecondService } from './app.ts';
import { secondServiceConfigSchema } from './config.ts';

export const serviceDefinition: ServiceDefinition = {
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
};
