// The terminal service as the registry lists it and the `boxyard` command runs it: `boxyard serve terminal` and
// `boxyard dev` start the gateway in the kit's host (service/host.ts); plugin.ts is what is its own.
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { defineService } from '@boxyard/kit/service/define-service.ts';
import { devDefaults } from '@boxyard/kit/service/dev-defaults.ts';
import type { HostedService, StartOptions } from '@boxyard/kit/service/host.ts';
import type { SessionBackend } from './backends/types.ts';
import { terminalBackup } from './backup.ts';
import { DEFAULT_METRICS_PORT, terminalConfigSchema, type TerminalConfig } from './config.ts';
import { clusterKind } from './kind.ts';
import type { AuditService } from './audit/service.ts';
import type { RecordingService } from './recording/service.ts';
import type { SessionService } from './sessions/service.ts';

export const TERMINAL_VERSION = '0.1.0';

export const serviceDefinition = defineService({
  name: 'terminal',
  version: TERMINAL_VERSION,
  config: terminalConfigSchema,
  metricsPort: DEFAULT_METRICS_PORT,
  errorShape: 'envelope',
  openapi: {
    title: 'Boxyard terminal',
    description:
      'On-demand shell sessions: start, list and stop over REST; terminal I/O over the WebSocket at /ws/terminal/{sessionId} (frame format in the README).',
  },
  kind: clusterKind,
  backup: terminalBackup,
  accounts: true,
  async devDefaults(context) {
    const home = resolve(context.home, 'terminal');
    const recordings = resolve(home, 'recordings');
    // Made here, as the kit makes the other services' storage: `boxyard restore` into a new home checks it first.
    await mkdir(recordings, { recursive: true, mode: 0o700 });
    return {
      ...(await devDefaults(context, 'terminal')),
      backend: { kind: 'local', local: { socket_dir: resolve(home, 'agents') } },
      storage: { driver: 'local', root: recordings },
      state_dir: home,
    };
  },
  plugin: async () => (await import('./plugin.ts')).terminalPlugin,
});

export interface TerminalService extends HostedService {
  sessions: SessionService;
  backend: SessionBackend;
  recordings: RecordingService;
  audit: AuditService;
}

/** Starts the gateway with a loaded config (tests, the bench); with port 0 the OS picks a port. */
export async function startTerminal(config: TerminalConfig, options: StartOptions = {}): Promise<TerminalService> {
  const running = await serviceDefinition.start(config, options);
  return { ...running, ...running.app.terminal };
}
