// How `boxyard serve file-share` and `boxyard dev` start this service (the CLI lists this definition).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '@boxyard/kit';
import type { ServiceDefinition } from '@boxyard/kit/service-definition.ts';
import { startFileShare } from './app.ts';
import { fileShareConfigSchema, SERVICE_NAME, type FileShareConfig } from './config.ts';

export const serviceDefinition: ServiceDefinition = {
  name: SERVICE_NAME,

  async serve(configFile) {
    const share = await startFileShare(loadConfig(fileShareConfigSchema, { file: configFile }));
    return { name: SERVICE_NAME, url: share.url, metricsUrl: share.metricsUrl, close: () => share.close() };
  },

  async devConfig(context) {
    // Local storage under $BOXYARD_HOME/file-share (the driver wants an existing directory), PostgreSQL schema
    // `file_share` in the dev database, a session secret generated once and kept in the home's secrets file.
    const root = join(context.home, 'file-share');
    await mkdir(root, { recursive: true, mode: 0o700 });
    return loadConfig(fileShareConfigSchema, {
      defaults: {
        database: { url: context.databaseUrl },
        storage: { driver: 'local', root },
        state_dir: join(context.home, 'state', SERVICE_NAME),
        session: { secret: await context.secret('file_share_session_secret') },
        ...(context.adminPassword ? { admin: { password: context.adminPassword } } : {}),
      },
      overrides: context.overrides,
    });
  },

  async dev(context) {
    const share = await startFileShare((await this.devConfig(context)) as FileShareConfig);
    return { name: SERVICE_NAME, url: share.url, metricsUrl: share.metricsUrl, close: () => share.close() };
  },
};
