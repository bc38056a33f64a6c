// The box repository service: `boxyard serve box-repository` and `boxyard dev` start it through serviceDefinition.
export { boxRepositoryConfigSchema, DEFAULT_PORT, SERVICE_NAME, type BoxRepositoryConfig, type BoxRepositoryConfigInput } from './config.ts';
export { serviceDefinition, startBoxRepository, VERSION, type RunningBoxRepository } from './service.ts';
