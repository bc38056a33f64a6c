export { fileShareConfigSchema, DEFAULT_PORT, SERVICE_NAME, type FileShareConfig } from './config.ts';
export { serviceDefinition, startFileShare, FILE_SHARE_VERSION, type RunningFileShare } from './service.ts';
export { fileShareMigrations } from './backup.ts';
