// The few pages the sign-in routes show a browser: "continue" (a page that moves on by itself where a redirect
// would not do, see plugin.ts) and errors. No script, nothing loaded: a CSP that allows nothing but the meta refresh.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml } from '../web/html.ts';

const CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function page(title: string, body: string, head = ''): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${head}<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:3rem auto;max-width:40rem;padding:0 1rem;color:#222}p.detail{color:#555}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

/** Headers of every page and redirect here: the callback URL holds a code, so nothing is cached or referred. */
export function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
}

export function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return noStore(reply)
    .status(status)
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .type('text/html; charset=utf-8')
    .send(html);
}

export function continuePage(path: string, message: string): string {
  const href = escapeHtml(path);
  return page(message, `<h1>${escapeHtml(message)}</h1>\n<p><a href="${href}">Continue</a></p>`, `<meta http-equiv="refresh" content="0;url=${href}">\n`);
}

export function errorPage(title: string, message: string, retryHref: string | undefined): string {
  const retry = retryHref ? `<p><a href="${escapeHtml(retryHref)}">Try again</a> · <a href="/">Back</a></p>` : '<p><a href="/">Back</a></p>';
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p class="detail">${escapeHtml(message)}</p>\n${retry}`);
}

/** Whether the caller's Accept names `type` before the other of the two (a browser's page, or JSON). */
export const wants = (request: FastifyRequest, type: 'text/html' | 'application/json') => {
  const accept = request.headers.accept ?? '';
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  if (type === 'text/html') return html !== -1 && (json === -1 || html < json);
  return json !== -1 && (html === -1 || json < html);
};
