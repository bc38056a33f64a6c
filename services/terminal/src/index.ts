// The terminal service as the `boxyard` command runs it: `boxyard serve terminal` and `boxyard dev`.
import { resolve } from 'node:path';
import { loadConfig } from '@boxyard/kit';
import type { DevContext, RunningService, ServiceDefinition } from '@boxyard/kit/service-definition.ts';
import { startTerminal } from './app.ts';
import { terminalConfigSchema, type TerminalConfig } from './config.ts';

export { startTerminal, baseUrl, TERMINAL_VERSION, type TerminalService } from './app.ts';
export { terminalConfigSchema, DEFAULT_PORT, type TerminalConfig } from './config.ts';
/** For a `boxyard terminal-agent` subcommand: the agent in a session pod. */
export { runAgentFromEnvironment } from './agent/main.ts';

const running = (service: Awaited<ReturnType<typeof startTerminal>>): RunningService => ({ name: 'terminal', url: service.url, metricsUrl: service.metricsUrl, close: () => service.close() });

export const serviceDefinition: ServiceDefinition = {
  name: 'terminal',
  async serve(configFile) {
    return running(await startTerminal(loadConfig(terminalConfigSchema, { file: configFile })));
  },
  async devConfig(context: DevContext) {
    const home = resolve(context.home, 'terminal');
    return loadConfig(terminalConfigSchema, {
      defaults: {
        database: { url: context.databaseUrl, schema: 'terminal' },
        session: { secret: await context.secret('terminal_session_secret') },
        admin: context.adminPassword ? { password: context.adminPassword } : {},
        backend: { kind: 'local', local: { socket_dir: resolve(home, 'agents') } },
        state_dir: home,
      },
      overrides: context.overrides,
    });
  },
  async dev(context: DevContext) {
    return running(await startTerminal((await this.devConfig(context)) as TerminalConfig));
  },
};
