// The second service of seed 3: an HTTPS listener that publishes an OpenAPI 3.0.3 description, version 0.3.7,
// whose path list is empty. Nothing else is specified, so nothing else is served beyond the kit's
// operational routes (/health, /health/ready, /api-docs), which stay out of the description; /metrics is served on
// a listener of its own (metrics.port).
import { createApp, listenMetrics, metricsListenOptions, serverTls, publicBaseUrl } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { DEFAULT_METRICS_PORT, type SecondServiceConfig } from './config.ts';

export const SECOND_SERVICE_VERSION = '0.3.7';

export interface SecondService {
  app: FastifyInstance;
  url: string;
  /** /metrics, on its own listener (metrics.host:metrics.port). */
  metricsUrl: string;
  close(): Promise<void>;
}

export const baseUrl = (config: SecondServiceConfig, port = config.server.port) => publicBaseUrl(config.server, port);

export async function buildSecondService(config: SecondServiceConfig, port = config.server.port): Promise<FastifyInstance> {
  const tls = await serverTls(config.server, config.state_dir);
  return createApp({
    service: 'second-service',
    version: SECOND_SERVICE_VERSION,
    errorShape: 'problem',
    logLevel: config.logging.level,
    https: tls,
    trustProxy: config.server.trust_proxy,
    timeouts: config.server.timeouts,
    openapi: { title: 'Boxyard second service', openapi: '3.0.3', servers: [{ url: baseUrl(config, port) }] },
  });
}

/** Builds and listens. With port 0 the OS picks a port and `servers` names the real one. */
export async function startSecondService(config: SecondServiceConfig): Promise<SecondService> {
  let port = config.server.port;
  if (port === 0) port = await (await import('@boxyard/kit/net/free-port.ts')).freePort();
  const app = await buildSecondService(config, port);
  await app.listen({ host: config.server.host, port });
  const metrics = await listenMetrics(app.metrics, metricsListenOptions(config.metrics, config.server.port, DEFAULT_METRICS_PORT)).catch(async (error: unknown) => {
    await app.close();
    throw error;
  });
  return {
    app,
    url: baseUrl(config, port),
    metricsUrl: metrics.url,
    close: async () => {
      await metrics.close();
      await app.close();
    },
  };
}
