// The provider as openid-client sees it: discovery done once and kept (refreshed hourly, the old document kept
// when a refresh fails), a failed first discovery retried on the next sign-in rather than stopping the service.
// openid-client keeps the provider's JWKS with the configuration and refetches it for an unknown `kid`.
import * as client from 'openid-client';

export interface ProviderSettings {
  issuer: string;
  clientId: string;
  /** Absent: a public client (token endpoint auth `none`; PKCE alone protects the code). */
  clientSecret: string | undefined;
  /** Seconds a discovered configuration is used before it is fetched again. */
  refreshSeconds?: number;
}

export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

export function createProviderClient(settings: ProviderSettings) {
  const refreshMs = (settings.refreshSeconds ?? 3600) * 1000;
  let current: { config: client.Configuration; at: number } | undefined;
  let pending: Promise<client.Configuration> | undefined;

  const discover = async (): Promise<client.Configuration> => {
    const auth = settings.clientSecret ? client.ClientSecretPost(settings.clientSecret) : client.None();
    // The config schema allows http:// only on loopback (tests, a provider beside the service).
    const execute = settings.issuer.startsWith('http://') ? [client.allowInsecureRequests] : [];
    const config = await client.discovery(new URL(settings.issuer), settings.clientId, undefined, auth, { execute, timeout: 10 });
    current = { config, at: Date.now() };
    return config;
  };

  return {
    issuer: settings.issuer,

    /** The discovered configuration; throws ProviderUnavailableError when the provider can't be reached. */
    async configuration(): Promise<client.Configuration> {
      if (current && Date.now() - current.at < refreshMs) return current.config;
      pending ??= discover().finally(() => {
        pending = undefined;
      });
      try {
        return await pending;
      } catch (error) {
        if (current) {
          // Keep serving the known document; try again in a minute, not on every request.
          current.at = Date.now() - refreshMs + 60_000;
          return current.config;
        }
        throw new ProviderUnavailableError(`discovery at ${settings.issuer} failed: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}

export type ProviderClient = ReturnType<typeof createProviderClient>;
