export { fileShareConfigSchema, DEFAULT_PORT, SERVICE_NAME, type FileShareConfig } from './config.ts';
export { buildFileShare, startFileShare, FILE_SHARE_VERSION, fileShareMigrations, type FileShare, type RunningFileShare } from './app.ts';
export { serviceDefinition } from './service-definition.ts';
