// What the route plugins share: configuration, the database, object storage and the auth primitives.
import type { Accounts, DatabasePool, Mailer, ObjectStore, ProviderAccounts, SessionTokens } from '@boxyard/kit';
import type { Transform } from 'node:stream';
import type { BoxRepositoryConfig } from './config.ts';
import type { DownloadLinks } from './files/download-links.ts';
import type { SearchDocumentCache } from './cloud-api/search-document-cache.ts';
import type { SearchPositions } from './cloud-api/search-positions.ts';
import type { VersionsSections } from './console/versions-section.ts';
import type { MetadataCache } from './metadata/metadata-cache.ts';
import type { StorageCleanup } from './storage/cleanup.ts';
import type { LiveTls } from './setup/live-tls.ts';
import type { createGroupMembershipSync } from './provider-identity/group-memberships.ts';

/** Seams for tests only (never set from configuration). */
export interface TestHooks {
  /** Wraps every file download stream (e.g. to throttle or stall it mid-way). */
  downloadTransform?: () => Transform;
  /** Called with the Range header of every file download request. */
  onDownloadRequest?: (range: string | undefined) => void;
}

export interface ServiceContext {
  config: BoxRepositoryConfig;
  pool: DatabasePool;
  store: ObjectStore;
  accounts: Accounts;
  tokens: SessionTokens;
  /** Refresh tokens (variant B): JWTs of their own `typ`, so one never passes as a session token. */
  refreshTokens: SessionTokens;
  /** Outgoing mail (`mail.smtp`); undefined when not configured. */
  mailer: Mailer | undefined;
  downloadLinks: DownloadLinks;
  /** Serialized Vagrant metadata documents per box, checked against the box's metadata_version. */
  metadataCache: MetadataCache;
  /** The search results' JSON per box, checked against each box's stamp on every search (cloud-api/search-document-cache.ts). */
  searchDocuments: SearchDocumentCache;
  /** Where pages of a search start, checked against the search generation (cloud-api/search-positions.ts). */
  searchPositions: SearchPositions;
  /** The versions part of box pages, checked against each box's tree version (console/versions-section.ts). */
  versionsSections: VersionsSections;
  cleanup: StorageCleanup;
  /** Identity-provider tokens (auth.resource_server); undefined when off. */
  provider: ProviderAccounts | undefined;
  groupMemberships: ReturnType<typeof createGroupMembershipSync>;
  hooks: TestHooks;
  /** The package version, for /api/status and /api/discover. */
  version: string;
  startedAt: Date;
  /** The HTTPS listener's certificate; undefined when the service serves plain HTTP only. */
  tls: LiveTls | undefined;
  /** The ports listened on, once listening. */
  listening: { encryptedPort?: number; unencryptedPort?: number };
}
