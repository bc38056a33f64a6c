export { secondServiceConfigSchema, DEFAULT_PORT, type SecondServiceConfig } from './config.ts';
export { serviceDefinition, startSecondService, SECOND_SERVICE_VERSION, type SecondService } from './service.ts';
