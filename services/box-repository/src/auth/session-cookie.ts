// The web console's session: the same session JWT as `x-access-token`, kept by the browser in an HttpOnly cookie
// (scripts never see it), SameSite=Strict (other sites' pages never send it), Secure whenever the service is
// reached over HTTPS. Requests that change something with this cookie must also come from the service's own
// origin (Origin / Sec-Fetch-Site, kit's origin policy): cross-site request forgery is refused twice over.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../context.ts';

export const SESSION_COOKIE = 'box_session';

const isHttps = (ctx: ServiceContext, request: FastifyRequest) => request.protocol === 'https' || (ctx.config.server.public_url ?? '').startsWith('https:');

export function setSessionCookie(ctx: ServiceContext, request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: Date): void {
  reply.setCookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'strict',
    secure: isHttps(ctx, request),
    path: '/',
    maxAge: Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000)),
  });
}

export function clearSessionCookie(ctx: ServiceContext, request: FastifyRequest, reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', secure: isHttps(ctx, request), path: '/' });
}

export const sessionCookieOf = (request: FastifyRequest): string | undefined => {
  const value = (request as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies?.[SESSION_COOKIE];
  return value ? value : undefined;
};
