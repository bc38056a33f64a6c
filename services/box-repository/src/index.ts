// The box repository service: `boxyard serve box-repository` and `boxyard dev` start it through serviceDefinition.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '@boxyard/kit';
import type { ServiceDefinition } from '@boxyard/kit/service-definition.ts';
import { startBoxRepository } from './app.ts';
import { boxRepositoryConfigSchema, SERVICE_NAME, type BoxRepositoryConfig } from './config.ts';

export { boxRepositoryConfigSchema, DEFAULT_PORT, SERVICE_NAME, type BoxRepositoryConfig, type BoxRepositoryConfigInput } from './config.ts';
export { buildBoxRepository, startBoxRepository, VERSION, type BoxRepository, type RunningBoxRepository } from './app.ts';

export const serviceDefinition: ServiceDefinition = {
  name: SERVICE_NAME,
  async serve(configFile) {
    const running = await startBoxRepository(loadConfig(boxRepositoryConfigSchema, { file: configFile }));
    return { name: SERVICE_NAME, url: running.url, metricsUrl: running.metricsUrl, close: running.close };
  },
  async devConfig(context) {
    const root = join(context.home, SERVICE_NAME);
    await mkdir(root, { recursive: true, mode: 0o700 });
    return loadConfig(boxRepositoryConfigSchema, {
      defaults: {
        database: { url: context.databaseUrl },
        storage: { driver: 'local', root },
        state_dir: join(context.home, 'state', SERVICE_NAME),
        session: { secret: await context.secret('box_repository_session_secret') },
        ...(context.adminPassword ? { admin: { password: context.adminPassword } } : {}),
      },
      overrides: context.overrides,
    });
  },
  async dev(context) {
    const running = await startBoxRepository(await this.devConfig(context) as BoxRepositoryConfig);
    return { name: SERVICE_NAME, url: running.url, metricsUrl: running.metricsUrl, close: running.close };
  },
};
