// Which browser origins may change state with a user's ambient credentials (a cookie, cached Basic credentials)
// or open a socket. Browsers send Origin on every state-changing request and WebSocket upgrade, and
// Sec-Fetch-Site on all requests, so a page on another site (cross-site request forgery, WebSocket hijacking) is
// refused; a client without them (curl, websocat, scripts) is not a browser and sends its credentials on purpose.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden } from './http-error.ts';

export interface OriginPolicyOptions {
  /** Explicit list (config `allowed_origins`). */
  allowed?: string[] | undefined;
  /** `server.public_url`: its origin is the service's own. */
  publicUrl?: string | undefined;
}

const normalise = (origin: string) => origin.replace(/\/$/, '').toLowerCase();

export function createOriginPolicy(options: OriginPolicyOptions) {
  const fixed = options.allowed?.length ? options.allowed.map(normalise) : options.publicUrl ? [normalise(new URL(options.publicUrl).origin)] : undefined;

  /**
   * Without a configured origin, the service's own origin is the one the request was addressed to. fastify
   * takes scheme and host from the listener and Host, or from X-Forwarded-Proto/-Host only when the hop that
   * sent them is trusted (`server.trust_proxy`).
   */
  const ownOrigin = (request: FastifyRequest): string | undefined => (request.host ? normalise(`${request.protocol}://${request.host}`) : undefined);

  const isAllowed = (request: FastifyRequest): boolean => {
    const origin = request.headers.origin;
    if (origin === undefined) return true;
    const value = normalise(origin);
    if (fixed) return fixed.includes(value);
    return value === ownOrigin(request);
  };

  return {
    isAllowed,
    /** preHandler / onRequest: 403 for a browser request from a foreign origin. */
    check: async (request: FastifyRequest) => {
      if (!isAllowed(request)) throw forbidden(`Origin ${request.headers.origin} is not allowed`);
      // A browser that sent no Origin still says where the request comes from.
      if (request.headers.origin === undefined && request.headers['sec-fetch-site'] === 'cross-site')
        throw forbidden('Cross-site requests may not change anything here');
    },
  };
}

export type OriginPolicy = ReturnType<typeof createOriginPolicy>;

export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Refuses state-changing requests from foreign origins on every route of `app`. */
export function refuseCrossSiteWrites(app: FastifyInstance, policy: OriginPolicy): void {
  app.addHook('onRequest', async (request) => {
    if (!SAFE_METHODS.has(request.method)) await policy.check(request);
  });
}
