// Absolute URLs for links and Vagrant metadata: the configured public URL, else the address the client used
// (Host, or X-Forwarded-* when server.trust_proxy is on), so Vagrant sees download URLs on the host it asked,
// which is the only host it sends its token to.
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../context.ts';
import { withoutTrailingSlashes } from '@boxyard/kit';

export function baseUrlOf(ctx: ServiceContext, request: FastifyRequest): string {
  const configured = ctx.config.server.public_url;
  if (configured) return withoutTrailingSlashes(configured);
  return `${request.protocol}://${request.host}`;
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
