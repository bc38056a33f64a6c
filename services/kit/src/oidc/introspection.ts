// Opaque access tokens, checked at the provider's RFC 7662 introspection endpoint. Answers are cached briefly
// (keyed by a hash of the token, never the token itself), so a client's burst costs the provider one call; the
// price is that a revoked token may pass for up to INTROSPECTION_CACHE_SECONDS more on this replica.
import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import { ProviderUnavailableError } from './errors.ts';

export type IntrospectionResponse = client.IntrospectionResponse;

export const INTROSPECTION_CACHE_SECONDS = 60;
const MAX_ENTRIES = 10_000;

export interface Introspector {
  introspect(configuration: client.Configuration, token: string): Promise<IntrospectionResponse>;
}

export function createIntrospector(): Introspector {
  // Insertion order is age order: the oldest entry is the first key, dropped when the cache is full.
  const cache = new Map<string, { until: number; answer: Promise<IntrospectionResponse> }>();

  const ask = async (configuration: client.Configuration, token: string): Promise<IntrospectionResponse> => {
    try {
      return await client.tokenIntrospection(configuration, token, { token_type_hint: 'access_token' });
    } catch (error) {
      // The caller is not at fault whatever went wrong: the provider is away, or refuses our own credentials.
      throw new ProviderUnavailableError(`token introspection failed: ${(error as Error).message}`, { cause: error });
    }
  };

  return {
    async introspect(configuration, token) {
      const key = createHash('sha256').update(token).digest('base64url');
      const now = Date.now();
      const hit = cache.get(key);
      if (hit && hit.until > now) return hit.answer;
      cache.delete(key);
      // The promise is cached, so concurrent requests with one token share one call.
      const answer = ask(configuration, token);
      const entry = { until: now + INTROSPECTION_CACHE_SECONDS * 1000, answer };
      cache.set(key, entry);
      if (cache.size > MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      try {
        const response = await answer;
        // Never beyond the token's own expiry.
        if (typeof response.exp === 'number') entry.until = Math.min(entry.until, response.exp * 1000);
        return response;
      } catch (error) {
        if (cache.get(key) === entry) cache.delete(key);
        throw error;
      }
    },
  };
}
