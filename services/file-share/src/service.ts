// The file share as the registry lists it and the `boxyard` command runs it: `boxyard serve file-share` and
// `boxyard dev` start it in the kit's host (service/host.ts); plugin.ts is what is its own.
import type { DatabasePool, ObjectStore } from '@boxyard/kit';
import { defineService } from '@boxyard/kit/service/define-service.ts';
import { devDefaults } from '@boxyard/kit/service/dev-defaults.ts';
import type { HostedService, StartOptions } from '@boxyard/kit/service/host.ts';
import { fileShareBackup } from './backup.ts';
import { DEFAULT_METRICS_PORT, fileShareConfigSchema, SERVICE_NAME, type FileShareConfig } from './config.ts';
import { clusterKind } from './kind.ts';
import type { EventBus } from './events/event-bus.ts';
import type { Sweeper } from './maintenance/sweeper.ts';
import type { FileShareExtra } from './plugin.ts';

export const FILE_SHARE_VERSION = '0.1.0';

export const serviceDefinition = defineService({
  name: SERVICE_NAME,
  version: FILE_SHARE_VERSION,
  config: fileShareConfigSchema,
  metricsPort: DEFAULT_METRICS_PORT,
  errorShape: 'envelope',
  openapi: {
    title: 'Boxyard file share',
    description:
      'A web file server with an API: listings for people and tools, downloads with Range, uploads with SHA-256, ' +
      'folders, rename, delete, search, API keys and live events. Authenticate with `Authorization: Bearer <API key>`, ' +
      'a session from POST /auth/login/basic (Bearer or the auth_token cookie), or HTTP Basic.',
  },
  kind: clusterKind,
  backup: fileShareBackup,
  accounts: true,
  // Local storage under $BOXYARD_HOME/file-share, PostgreSQL schema `file_share` in the dev database.
  devDefaults: (context) => devDefaults(context, SERVICE_NAME, { localStorage: true }),
  plugin: async () => (await import('./plugin.ts')).fileSharePlugin,
});

export interface RunningFileShare extends HostedService {
  pool: DatabasePool;
  store: ObjectStore;
  bus: EventBus;
  sweeper: Sweeper;
}

/** Starts with a loaded config (tests, the bench); with port 0 the OS picks a port. */
export async function startFileShare(config: FileShareConfig, extra: FileShareExtra = {}, options: StartOptions = {}): Promise<RunningFileShare> {
  const running = await serviceDefinition.start(config, { ...options, extra: { ...extra } });
  const { app } = running;
  return { ...running, pool: app.pool, store: app.store, bus: app.fileShare.bus, sweeper: app.fileShare.sweeper };
}
