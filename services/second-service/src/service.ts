// The second service of seed 3: an HTTPS listener that publishes an OpenAPI 3.0.3 description, version 0.3.7,
// whose path list is empty. Nothing else is specified, so nothing else is served beyond the kit's
// operational routes (/health, /health/ready, /api-docs), which stay out of the description; /metrics is served on
// a listener of its own (metrics.port).
import { defineService } from '@boxyard/kit/service/define-service.ts';
import type { HostedService } from '@boxyard/kit/service/host.ts';
import { DEFAULT_METRICS_PORT, secondServiceConfigSchema, type SecondServiceConfig } from './config.ts';

export const SECOND_SERVICE_VERSION = '0.3.7';

export const serviceDefinition = defineService({
  name: 'second-service',
  version: SECOND_SERVICE_VERSION,
  config: secondServiceConfigSchema,
  metricsPort: DEFAULT_METRICS_PORT,
  errorShape: 'problem',
  openapi: { title: 'Boxyard second service', openapi: '3.0.3' },
  devDefaults: async (context) => ({ state_dir: `${context.home}/tls` }),
  // Nothing of its own: the kit's app is the whole service.
  plugin: async () => async () => {},
});

export type SecondService = HostedService;

/** Starts with a loaded config. With port 0 the OS picks a port and `servers` names the real one. */
export const startSecondService = (config: SecondServiceConfig): Promise<SecondService> => serviceDefinition.start(config);
