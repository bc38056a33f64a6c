export { secondServiceConfigSchema, DEFAULT_PORT, type SecondServiceConfig } from './config.ts';
export { buildSecondService, startSecondService, SECOND_SERVICE_VERSION, type SecondService } from './app.ts';
export { serviceDefinition } from './service-definition.ts';
