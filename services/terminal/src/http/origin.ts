// Which browser origins may open a terminal socket or change state with the user's cookie. Browsers always
// send Origin on WebSocket upgrades, so a page on another origin (cross-site WebSocket hijacking) is refused;
// a client without Origin (curl, websocat, scripts) is not a browser and carries its cookie on purpose.
import type { FastifyRequest } from 'fastify';
import { forbidden } from '@boxyard/kit';

export interface OriginPolicyOptions {
  /** Explicit list (config `allowed_origins`). */
  allowed?: string[] | undefined;
  /** `server.public_url`: its origin is the service's own. */
  publicUrl?: string | undefined;
  /** Whether the listener itself speaks TLS (for the Host-based default). */
  tls: boolean;
  trustProxy: boolean;
}

const normalise = (origin: string) => origin.replace(/\/$/, '').toLowerCase();

export function createOriginPolicy(options: OriginPolicyOptions) {
  const fixed = options.allowed?.length ? options.allowed.map(normalise) : options.publicUrl ? [normalise(new URL(options.publicUrl).origin)] : undefined;

  /** Without a configured origin, the service's own origin is the one the request was addressed to. */
  const ownOrigin = (request: FastifyRequest): string | undefined => {
    const host = request.headers.host;
    if (!host) return undefined;
    const forwarded = options.trustProxy ? request.headers['x-forwarded-proto'] : undefined;
    const proto = typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : options.tls ? 'https' : 'http';
    return normalise(`${proto}://${host}`);
  };

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
    },
  };
}

export type OriginPolicy = ReturnType<typeof createOriginPolicy>;
