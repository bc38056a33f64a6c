// FileShare: the file share in a cluster. Its own spec fields are keys of config.ts, whose schema gives the CRD
// their types, defaults, bounds and descriptions (the operator adds the common fields and storage).
import type { ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { DEFAULT_PORT, fileShareConfigSchema, SERVICE_NAME } from './config.ts';

export const clusterKind: ClusterKind = {
  kind: 'FileShare',
  plural: 'fileshares',
  singular: 'fileshare',
  shortNames: ['fshare', 'fshares'],
  description: 'A web file server with an API (list, download, upload, search, API keys, live events), backed by PostgreSQL and S3-compatible storage.',
  service: SERVICE_NAME,
  port: DEFAULT_PORT,
  databaseSchema: 'file_share',
  storage: true,
  managesPods: false,
  configSchema: fileShareConfigSchema,
  configFields: ['uploads.max_bytes', 'events.heartbeat_seconds', 'events.retention_hours', 'shares.default_expiry_seconds', 'shares.max_expiry_seconds'],
};
