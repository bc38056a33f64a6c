// The second service as the `boxyard` command runs it.
import { loadConfig } from '@boxyard/kit';
import type { ServiceDefinition } from '@boxyard/kit/service-definition.ts';
import { startSecondService } from './app.ts';
import { secondServiceConfigSchema, type SecondServiceConfig } from './config.ts';

export const serviceDefinition: ServiceDefinition = {
  name: 'second-service',
  async serve(configFile) {
    const running = await startSecondService(loadConfig(secondServiceConfigSchema, { file: configFile }));
    return { name: 'second-service', ...running };
  },
  async devConfig(context) {
    return loadConfig(secondServiceConfigSchema, { defaults: { state_dir: `${context.home}/tls` }, overrides: context.overrides });
  },
  async dev(context) {
    const running = await startSecondService((await this.devConfig(context)) as SecondServiceConfig);
    return { name: 'second-service', ...running };
  },
};
