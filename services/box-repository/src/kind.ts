// BoxRepository: the box repository in a cluster. Its own spec fields are keys of config.ts, whose schema gives
// the CRD their types, defaults, bounds and descriptions (the operator adds the common fields and storage).
import type { ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { boxRepositoryConfigSchema, DEFAULT_PORT, SERVICE_NAME } from './config.ts';

export const clusterKind: ClusterKind = {
  kind: 'BoxRepository',
  plural: 'boxrepositories',
  singular: 'boxrepository',
  shortNames: ['boxrepo', 'boxrepos'],
  description: 'A Vagrant box repository (`vagrant box add org/box`), backed by PostgreSQL and S3-compatible storage.',
  service: SERVICE_NAME,
  port: DEFAULT_PORT,
  databaseSchema: 'box_repository',
  storage: true,
  managesPods: false,
  configSchema: boxRepositoryConfigSchema,
  configFields: [
    'uploads.max_bytes',
    'uploads.stall_timeout_seconds',
    'download_links.ttl_seconds',
    { key: 'auth.sign_up', spec: 'signUp' },
    // The seed's class ceilings, beside the common rateLimiting.maxRequests / windowSeconds.
    'rate_limiting.file_operations_max_requests',
    'rate_limiting.download_max_requests',
    'rate_limiting.download_link_max_requests',
    'rate_limiting.architecture_operations_max_requests',
  ],
};
