// What the verifier needs from the provider: its metadata (OpenID discovery through openid-client), its signing
// keys (jose's remote JWKS: cached; an unknown kid refetches, at most once per `jwks_refetch_min_seconds`, so a
// rotated key is picked up without a restart and a flood of bogus kids cannot turn into a flood of fetches), and
// a client configuration for introspection. Discovered lazily, so a service starts while the provider is away.
import { createRemoteJWKSet, errors as joseErrors, type JWTVerifyGetKey } from 'jose';
import * as client from 'openid-client';
import type { ResourceServerConfig } from '../config/auth-section.ts';
import { ProviderUnavailableError } from './errors.ts';
import { ignoreError } from '../errors/ignore-error.ts';

export interface ProviderLog {
  warn(object: object, message: string): void;
}

export interface Provider {
  issuer: string;
  /** Key lookup for jwtVerify; a provider that cannot be reached surfaces as ProviderUnavailableError. */
  keys: JWTVerifyGetKey;
  /** Set when `introspection` is configured. */
  introspection?: client.Configuration;
}

/** Metadata is refreshed this often (in the background; the old one serves meanwhile). */
const METADATA_TTL_MS = 60 * 60 * 1000;
/** After a failed discovery, requests fail fast for this long instead of each waiting on the provider. */
const FAILURE_BACKOFF_MS = 5_000;
const HTTP_TIMEOUT_SECONDS = 5;
/** Keys are refetched at least this often even when every kid is known (keys withdrawn by the provider). */
const JWKS_MAX_AGE_MS = 10 * 60 * 1000;

const isHttp = (url: string) => url.startsWith('http://');

export function createProviderSource(config: ResourceServerConfig & { issuer: string }, log: ProviderLog): { get(): Promise<Provider> } {
  let current: { provider: Provider; jwksUri: string; at: number } | undefined;
  let pending: Promise<Provider> | undefined;
  let failedAt = 0;

  const discover = async (): Promise<Provider> => {
    const introspection = config.introspection;
    const auth = introspection
      ? introspection.auth_method === 'client_secret_post'
        ? client.ClientSecretPost(introspection.client_secret)
        : client.ClientSecretBasic(introspection.client_secret)
      : client.None();
    const insecure = isHttp(config.issuer) || (introspection?.endpoint !== undefined && isHttp(introspection.endpoint));
    let discovered: client.Configuration;
    try {
      discovered = await client.discovery(new URL(config.issuer), introspection?.client_id ?? 'boxyard-resource-server', undefined, auth, {
        // http:// is only accepted on loopback by the config schema (a provider started next to the service).
        execute: insecure ? [client.allowInsecureRequests] : [],
        timeout: HTTP_TIMEOUT_SECONDS,
      });
    } catch (error) {
      throw new ProviderUnavailableError(`OpenID discovery at ${config.issuer} failed: ${(error as Error).message}`, { cause: error });
    }
    const metadata = discovered.serverMetadata();
    if (!metadata.jwks_uri) throw new ProviderUnavailableError(`the provider ${config.issuer} publishes no jwks_uri`);
    if (introspection && !introspection.endpoint && !metadata.introspection_endpoint) {
      throw new ProviderUnavailableError(`the provider ${config.issuer} publishes no introspection_endpoint; set auth.resource_server.introspection.endpoint`);
    }
    const reuse = current?.jwksUri === metadata.jwks_uri ? current.provider.keys : undefined;
    const keys = reuse ?? remoteKeys(new URL(metadata.jwks_uri), config.jwks_refetch_min_seconds);
    let introspectionConfig: client.Configuration | undefined;
    if (introspection) {
      // A plain JSON copy of the metadata (openid-client adds helper methods to it) with the configured endpoint.
      introspectionConfig = introspection.endpoint
        ? new client.Configuration(
            { ...(JSON.parse(JSON.stringify(metadata)) as client.ServerMetadata), introspection_endpoint: introspection.endpoint },
            introspection.client_id,
            undefined,
            auth,
          )
        : discovered;
      if (insecure) client.allowInsecureRequests(introspectionConfig);
      introspectionConfig.timeout = HTTP_TIMEOUT_SECONDS;
    }
    const provider: Provider = { issuer: metadata.issuer, keys, ...(introspectionConfig ? { introspection: introspectionConfig } : {}) };
    current = { provider, jwksUri: metadata.jwks_uri, at: Date.now() };
    return provider;
  };

  const refresh = (): Promise<Provider> => {
    pending ??= discover()
      .catch((error: unknown) => {
        failedAt = Date.now();
        log.warn({ err: error }, 'identity provider discovery failed');
        throw error;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };

  return {
    async get() {
      if (current) {
        // Stale metadata keeps serving while a refresh runs; a failed refresh is logged and retried later.
        if (Date.now() - current.at > METADATA_TTL_MS && !pending && Date.now() - failedAt > FAILURE_BACKOFF_MS)
          void refresh().catch(ignoreError('refresh() logs its own failure and starts the backoff'));
        return current.provider;
      }
      if (Date.now() - failedAt < FAILURE_BACKOFF_MS) throw new ProviderUnavailableError('identity provider discovery failed recently');
      return refresh();
    },
  };
}

/** jose's remote JWKS, with its fetch failures told apart from "no such key". */
function remoteKeys(url: URL, refetchMinSeconds: number): JWTVerifyGetKey {
  const jwks = createRemoteJWKSet(url, {
    cooldownDuration: refetchMinSeconds * 1000,
    cacheMaxAge: JWKS_MAX_AGE_MS,
    timeoutDuration: HTTP_TIMEOUT_SECONDS * 1000,
  });
  return async (header, token) => {
    try {
      return await jwks(header, token);
    } catch (error) {
      if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys || error instanceof joseErrors.JOSENotSupported)
        throw error;
      throw new ProviderUnavailableError(`fetching the provider's keys from ${url.href} failed: ${(error as Error).message}`, { cause: error });
    }
  };
}
