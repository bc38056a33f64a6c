// Headers for the HTML pages and assets a service serves itself: a strict Content-Security-Policy (scripts and
// styles from the service's own files only, no inline code, nothing from other origins), no framing, no sniffing,
// no referrer leaving the site.
import type { FastifyReply } from 'fastify';

export const STRICT_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function pageHeaders(reply: FastifyReply, csp: string = STRICT_CSP): FastifyReply {
  return reply
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('x-frame-options', 'DENY');
}
