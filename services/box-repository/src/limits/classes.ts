// Which budget a request counts against (rate_limiting.*_max_requests): what `vagrant box add` does (metadata,
// then the download) counts as `download`, so pulling boxes never uses up the budget for everything else.
import type { FastifyRequest } from 'fastify';
import type { BoxRepositoryConfig } from '../config.ts';

export const LIMIT_CLASSES = ['download', 'download_link', 'file_operations', 'architecture_operations'] as const;
export type LimitClass = (typeof LIMIT_CLASSES)[number];

const DOWNLOAD_ROUTES = new Set([
  '/:org/boxes/:box/versions/:version/providers/:provider/:arch/:file_name',
  '/api/organization/:org/box/:box/metadata',
  '/api/v2/vagrant/:org/:box',
  '/:org/:box',
]);
const ARCHITECTURE_SEGMENT = '/architecture';
/** The publishing API's upload URLs, their hand-out and callbacks (cloud-api/): box files, like FILE_SEGMENT. */
const PUBLISHING_UPLOADS = /^\/api\/v[12]\/(uploads\/|box\/.*\/upload(\/direct)?$)/;
const FILE_SEGMENT = '/architecture/:arch/file';

/** The class of a request by its route template (never its raw path); undefined: the global budget. */
export function limitClassOf(request: FastifyRequest): LimitClass | undefined {
  const route = request.routeOptions.url;
  if (!route) return undefined;
  if (DOWNLOAD_ROUTES.has(route) || route.endsWith(`${FILE_SEGMENT}/download`)) return 'download';
  if (route.endsWith(`${FILE_SEGMENT}/get-download-link`)) return 'download_link';
  if (route.includes(FILE_SEGMENT) || PUBLISHING_UPLOADS.test(route)) return 'file_operations';
  if (route.includes(ARCHITECTURE_SEGMENT)) return 'architecture_operations';
  return undefined;
}

export function limitCeilings(limits: BoxRepositoryConfig['rate_limiting']): Record<LimitClass, number> {
  return {
    download: limits.download_max_requests,
    download_link: limits.download_link_max_requests,
    file_operations: limits.file_operations_max_requests,
    architecture_operations: limits.architecture_operations_max_requests,
  };
}

/** The limits as /api/rules and /api/discover publish them. */
export function describeLimits(config: BoxRepositoryConfig) {
  const limits = config.rate_limiting;
  return {
    rate_limiting: {
      enabled: limits.enabled,
      window_seconds: limits.window_seconds,
      max_requests: limits.max_requests,
      ceilings: Object.fromEntries(Object.entries(limitCeilings(limits)).map(([name, max]) => [`${name}_max_requests`, max])),
      per: 'client address',
    },
    uploads: { max_bytes: config.uploads.max_bytes, stall_timeout_seconds: config.uploads.stall_timeout_seconds },
    download_links: { ttl_seconds: config.download_links.ttl_seconds },
  };
}
