// Headers of every page and asset the console serves: a strict Content-Security-Policy (scripts, styles and
// connections from the share itself only; no inline script or style, no other origin, no framing), no MIME
// sniffing, and no referrer leaving the site (share paths can be private).
import type { FastifyReply } from 'fastify';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

/** Sends `html` as a console page with the security headers; pages carry who is signed in, so never shared caches. */
export function sendPage(reply: FastifyReply, html: string, status = 200): FastifyReply {
  return reply
    .status(status)
    .headers({ ...PAGE_HEADERS, 'cache-control': 'private, no-cache' })
    .type('text/html; charset=utf-8')
    .serializer((payload: unknown) => payload as string)
    .send(html);
}
