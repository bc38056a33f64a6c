// `defineService`: a service's declaration becomes what the registry lists and the `boxyard` command runs —
// `serve` (a config file and the environment), `devConfig` (embedded defaults, the installation's overrides, the
// environment) and `dev` — all started by the one host.
import { loadConfig } from '../config/load-config.ts';
import type { DevContext } from '../service-definition.ts';
import type { HostedConfig, ServiceModule, ServiceSpec } from './contract.ts';
import { startService, type HostedService, type StartOptions } from './host.ts';

export function defineService<C extends HostedConfig>(
  spec: ServiceSpec<C>,
): ServiceModule<C> & {
  /** Starts with a loaded config (tests, and `serve`/`dev` through it). */
  start(config: C, options?: StartOptions): Promise<HostedService>;
  devConfig(context: DevContext): Promise<C>;
} {
  const start = (config: C, options?: StartOptions) => startService(spec, config, options);
  const devConfig = async (context: DevContext) => loadConfig(spec.config, { defaults: await spec.devDefaults(context), overrides: context.overrides });
  return {
    ...spec,
    start,
    devConfig,
    serve: async (configFile) => start(loadConfig(spec.config, { file: configFile })),
    dev: async (context) => start(await devConfig(context)),
  };
}
