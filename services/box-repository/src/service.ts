// The box repository as the registry lists it and the `boxyard` command runs it: `boxyard serve box-repository`
// and `boxyard dev` start it in the kit's host (service/host.ts); plugin.ts is what is its own. Its listeners are
// the seed's (`boxyard.api_listen_port_encrypted` / `_unencrypted`), and its certificate can be replaced through
// its API (setup/live-tls.ts).
import type { Server as TlsServer } from 'node:tls';
import { defineService } from '@boxyard/kit/service/define-service.ts';
import { devDefaults } from '@boxyard/kit/service/dev-defaults.ts';
import type { HostedService, StartOptions } from '@boxyard/kit/service/host.ts';
import { boxRepositoryBackup } from './backup.ts';
import { boxRepositoryConfigSchema, DEFAULT_METRICS_PORT, SERVICE_NAME, type BoxRepositoryConfig } from './config.ts';
import { clusterKind } from './kind.ts';
import type { ServiceContext, TestHooks } from './context.ts';
import { PROBLEM_BASE } from './http/errors.ts';
import { limitCeilings, limitClassOf } from './limits/classes.ts';
import { createLiveTls } from './setup/live-tls.ts';
import { VERSION } from './version.ts';

export { VERSION } from './version.ts';

/**
 * The listeners: `boxyard.api_listen_port_encrypted` (HTTPS) and `boxyard.api_listen_port_unencrypted` (HTTP),
 * or, with neither set, server.port alone (HTTPS when server.tls.enabled).
 */
export function listenPorts(config: BoxRepositoryConfig): { encrypted?: number; unencrypted?: number } {
  const { api_listen_port_encrypted: encrypted, api_listen_port_unencrypted: unencrypted } = config.boxyard;
  const https = encrypted ?? (config.server.tls.enabled && unencrypted === undefined ? config.server.port : undefined);
  const http = unencrypted ?? (https === undefined ? config.server.port : undefined);
  return { ...(https !== undefined ? { encrypted: https } : {}), ...(http !== undefined ? { unencrypted: http } : {}) };
}

export const serviceDefinition = defineService({
  name: SERVICE_NAME,
  version: VERSION,
  config: boxRepositoryConfigSchema,
  metricsPort: DEFAULT_METRICS_PORT,
  errorShape: 'problem',
  problemBase: PROBLEM_BASE,
  openapi: {
    title: 'Boxyard box repository',
    description:
      'Vagrant boxes: organization > box > version > provider > architecture > file. `vagrant box add org/box` works with VAGRANT_SERVER_URL set to this service.',
  },
  kind: clusterKind,
  backup: boxRepositoryBackup,
  accounts: true,
  rateLimitClasses: (config) => ({ of: limitClassOf, max: limitCeilings(config.rate_limiting) }),
  mainListener(config) {
    const ports = listenPorts(config);
    return ports.encrypted !== undefined ? { port: ports.encrypted, https: true } : { port: ports.unencrypted!, https: false };
  },
  async tls({ config, pool, log }) {
    if (listenPorts(config).encrypted === undefined) return undefined;
    const live = await createLiveTls({
      server: config.server,
      stateDir: config.state_dir,
      pool: pool!,
      log,
      secrets: [config.session.secret, ...config.session.previous_secrets],
    });
    return { initial: live.initial, attach: (app) => live.attach(app.server as unknown as TlsServer), live };
  },
  afterListen: async (app, { config, port }) => (await import('./plugin.ts')).listenBesideHttps(app, config, port, listenPorts(config)),
  devDefaults: (context) => devDefaults(context, SERVICE_NAME, { localStorage: true }),
  plugin: async () => (await import('./plugin.ts')).boxRepositoryPlugin,
});

export interface RunningBoxRepository extends HostedService {
  ctx: ServiceContext;
  /** The unencrypted listener beside an HTTPS one, when configured. */
  unencryptedUrl: string | undefined;
}

/** Starts with a loaded config (tests, the bench); `port` replaces the main listener's (0: the OS chooses). */
export async function startBoxRepository(config: BoxRepositoryConfig, options: StartOptions & { hooks?: TestHooks } = {}): Promise<RunningBoxRepository> {
  const running = await serviceDefinition.start(config, { ...options, extra: { hooks: options.hooks } });
  const ctx = running.app.boxRepository;
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  const plainBeside = ctx.listening.encryptedPort !== undefined ? ctx.listening.unencryptedPort : undefined;
  return { ...running, ctx, unencryptedUrl: plainBeside !== undefined ? `http://${host}:${plainBeside}` : undefined };
}
