// Absolute URLs for links and Vagrant metadata: the configured public URL, else the address the client used
// (Host, or X-Forwarded-* when server.trust_proxy is on), so Vagrant sees download URLs on the host it asked,
// which is the only host it sends its token to.
import { publicBaseUrl, withoutTrailingSlashes } from '@boxyard/kit';
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../context.ts';

export function baseUrlOf(ctx: ServiceContext, request: FastifyRequest): string {
  const configured = ctx.config.server.public_url;
  if (configured) return withoutTrailingSlashes(configured);
  return `${request.protocol}://${request.host}`;
}

/** Addresses that mean "every interface": no address anyone could be sent to. */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0']);

/**
 * The base of links that go to someone else (invitation mails), never taken from the request: its Host header is
 * whatever the client sent, and a link mailed with a token in it must not point at a host the client picked.
 * `server.public_url`; else the listener's own address; undefined when the service listens on every address
 * and has no public URL (there is no own address to use).
 */
export function ownBaseUrl(ctx: ServiceContext): string | undefined {
  const { server } = ctx.config;
  if (server.public_url) return withoutTrailingSlashes(server.public_url);
  const { encryptedPort, unencryptedPort } = ctx.listening;
  const port = encryptedPort ?? unencryptedPort;
  if (WILDCARD_HOSTS.has(server.host) || port === undefined) return undefined;
  return publicBaseUrl({ ...server, tls: { ...server.tls, enabled: encryptedPort !== undefined } }, port);
}

export interface FilePath {
  org: string;
  box: string;
  version: string;
  provider: string;
  arch: string;
  fileName: string;
}

/** The stable download URL of a file: the same for every request, so interrupted downloads can resume. */
export function downloadUrl(base: string, path: FilePath): string {
  const e = encodeURIComponent;
  return `${base}/${e(path.org)}/boxes/${e(path.box)}/versions/${e(path.version)}/providers/${e(path.provider)}/${e(path.arch)}/${e(path.fileName)}`;
}
