// The attributes of the auth_token session cookie: always HttpOnly and SameSite=Strict; Secure whenever the
// browser is on HTTPS (the request's scheme, behind a trusted proxy its X-Forwarded-Proto, or an https
// `server.public_url`) and on loopback, where browsers keep Secure cookies over plain http. On plain http
// elsewhere a Secure cookie would be dropped by the browser and nobody could sign in on the page.
import type { FastifyRequest } from 'fastify';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export interface SessionCookiePolicy {
  options(request: FastifyRequest): { httpOnly: true; secure: boolean; sameSite: 'strict'; path: '/' };
}

export function createSessionCookiePolicy(publicUrl: string | undefined): SessionCookiePolicy {
  const httpsPublicUrl = publicUrl !== undefined && new URL(publicUrl).protocol === 'https:';
  return {
    options(request) {
      const host = request.hostname.toLowerCase();
      const secure = httpsPublicUrl || request.protocol === 'https' || LOOPBACK.has(host) || host.endsWith('.localhost');
      return { httpOnly: true, secure, sameSite: 'strict', path: '/' };
    },
  };
}
