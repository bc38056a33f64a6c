// Browser sign-in with the configured OpenID provider (authorization code + PKCE through openid-client), ending
// in the service's own session cookie, and sign-out of both (RP-initiated logout):
//
//   GET  /auth/oidc/login?return_to=/path   → 303 to the provider (state, nonce, PKCE S256 in a sealed cookie)
//   GET  /auth/oidc/callback                → code exchange, ID token checked, user found or created,
//                                             the service's session cookie set, then on to return_to
//   POST /auth/oidc/logout                  → the service session revoked, then on to the provider's
//                                             end_session_endpoint (id_token_hint, post_logout_redirect_uri)
//
// The service hands in how it starts and ends its own sessions, so the cookie is exactly the one password
// sign-in sets. Failures answer an HTML page to a browser and the service's error shape to anything else.
// The parts: login and logout are here, the callback is callback-route.ts, what they share sign-in-context.ts,
// failures sign-in-failure.ts.
import * as client from 'openid-client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabasePool } from 'slonik';
import type { User } from '../accounts/accounts.ts';
import type { AuthConfig } from '../config/auth-section.ts';
import { callbackRoute } from './callback-route.ts';
import { continuePage, noStore, sendPage, wants } from './pages.ts';
import { safeReturnPath } from './return-to.ts';
import { configuration, signInContext, type SignInContext } from './sign-in-context.ts';
import { fail, SignInFailure } from './sign-in-failure.ts';
import { LOGIN_PATH, LOGOUT_PATH } from './sign-in-paths.ts';
import { TRANSACTION_TTL_SECONDS, transactionCookieOptions } from './transaction.ts';

export { CALLBACK_PATH, LOGIN_PATH, LOGOUT_PATH } from './sign-in-paths.ts';

/** How the service signs a user in and out: the same code its password sign-in and sign-out use. */
export interface ServiceSession {
  /** Sets the service's session cookie for `user`; returns the session token's id and expiry. */
  start(reply: FastifyReply, user: User): Promise<{ jti: string; expiresAt: Date }>;
  /** Revokes the caller's session (if any) and clears its cookie; returns the ended session's id. */
  end(request: FastifyRequest, reply: FastifyReply): Promise<string | undefined>;
}

export interface OidcSignInOptions {
  /** Names the transaction cookie (services on one host must not share it) and the logs. */
  service: string;
  auth: AuthConfig;
  /** The service's public base URL (server.public_url): the redirect URIs are built from it. */
  publicUrl: string;
  /** session.secret: the transaction cookie's key is derived from it. */
  secret: string;
  pool: DatabasePool;
  session: ServiceSession;
  /** The service's role names; default admin / user. */
  roles?: { admin: string; user: string };
  /** The service's success body (JSON answers to sign-out). */
  ok: (message: string, data: Record<string, unknown>) => unknown;
}

/** What a service started by the kit's host passes the same way: its name, auth section, public URL, secret, pool. */
export const hostedSignInOptions = (app: FastifyInstance, service: string, config: { auth: AuthConfig; session: { secret: string } }, publicUrl: string) =>
  ({ service, auth: config.auth, publicUrl, secret: config.session.secret, pool: app.pool }) satisfies Partial<OidcSignInOptions>;

/** What a service's `GET /auth/methods` lists for this sign-in, when enabled. */
export function oidcSignInMethod(auth: AuthConfig) {
  return { type: 'oidc', method: 'GET', path: `${LOGIN_PATH}?return_to=/`, logout: LOGOUT_PATH, display_name: auth.sign_in.display_name };
}

/** Starts a sign-in: the transaction in a sealed cookie, the browser on to the provider. */
async function startSignIn(ctx: SignInContext, request: FastifyRequest<{ Querystring: { return_to?: string } }>, reply: FastifyReply) {
  const { auth } = ctx.options;
  const returnTo = safeReturnPath(request.query.return_to);
  if (request.query.return_to !== undefined && returnTo !== request.query.return_to)
    request.log.info({ returnTo: request.query.return_to }, 'oidc sign-in: return_to ignored (not a path on this service)');
  const config = await configuration(ctx);
  const state = client.randomState();
  const nonce = client.randomNonce();
  const codeVerifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: ctx.callbackUrl,
    scope: auth.sign_in.scopes.join(' '),
    state,
    nonce,
    // PKCE always, whether or not the provider advertises it.
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  });
  reply.setCookie(ctx.cookieName, await ctx.sealer.seal({ state, nonce, codeVerifier, returnTo }), transactionCookieOptions(TRANSACTION_TTL_SECONDS));
  return noStore(reply).redirect(url.href, 303);
}

function loginRoute(app: FastifyInstance, ctx: SignInContext, tags: string[]): void {
  app.get<{ Querystring: { return_to?: string } }>(
    LOGIN_PATH,
    {
      schema: {
        tags,
        summary: `Sign in with ${ctx.options.auth.sign_in.display_name} (OpenID Connect): 303 to the provider, with a short-lived sign-in cookie`,
        querystring: {
          type: 'object',
          properties: {
            return_to: { type: 'string', maxLength: 2048, description: 'A path on this service to return to (default /); anything else is ignored' },
          },
        },
      },
    },
    async (request, reply) => {
      try {
        return await startSignIn(ctx, request, reply);
      } catch (error) {
        if (error instanceof SignInFailure) return fail(request, reply, error);
        throw error;
      }
    },
  );
}

/** The provider's end-session URL for a session signed in with it, when the provider has one and can be reached. */
async function endSessionUrlFor({ provider, postLogoutUrl }: SignInContext, request: FastifyRequest, idToken: string): Promise<string | undefined> {
  try {
    const config = await provider.configuration();
    if (config.serverMetadata().end_session_endpoint) {
      return client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutUrl }).href;
    }
  } catch (error) {
    // The service session is over either way; the provider's will end when it expires there.
    request.log.warn({ err: error }, 'oidc sign-out: provider unavailable; only the service session was ended');
  }
  return undefined;
}

function logoutRoute(app: FastifyInstance, ctx: SignInContext, tags: string[]): void {
  const { options } = ctx;
  const displayName = options.auth.sign_in.display_name;
  app.post(
    LOGOUT_PATH,
    {
      schema: {
        tags,
        summary: `Sign out of this service and of ${displayName}`,
        description:
          'Revokes the session and clears its cookie, then (for a session signed in with the provider) redirects (303) to the ' +
          "provider's end_session_endpoint with id_token_hint and post_logout_redirect_uri. With `Accept: application/json` " +
          'it answers 200 with that URL as `end_session_url` instead, for pages that navigate themselves; a browser form ' +
          '(`Accept: text/html`) gets a page that goes there by itself (a redirect would meet the CSP form-action of strict pages).',
      },
    },
    async (request, reply) => {
      const jti = await options.session.end(request, reply);
      const idToken = jti ? await ctx.links.takeSession(jti) : undefined;
      const endSessionUrl = idToken ? await endSessionUrlFor(ctx, request, idToken) : undefined;
      noStore(reply);
      if (wants(request, 'application/json'))
        return options.ok(jti ? 'Signed out' : 'Not signed in', { signed_out: Boolean(jti), end_session_url: endSessionUrl ?? null });
      // A browser's form: browsers apply the page's CSP form-action to the redirects that follow a form post, so
      // a strict page ('self') could not reach the provider through a 303. A page that moves on by itself can.
      if (wants(request, 'text/html'))
        return sendPage(reply, 200, continuePage(endSessionUrl ?? '/', endSessionUrl ? `Signed out; signing out of ${displayName}` : 'Signed out'));
      return reply.redirect(endSessionUrl ?? '/', 303);
    },
  );
}

export async function oidcSignIn(app: FastifyInstance, options: OidcSignInOptions): Promise<void> {
  const { auth } = options;
  const issuer = auth.sign_in.issuer ?? auth.resource_server.issuer;
  if (!auth.sign_in.enabled || !issuer || !auth.sign_in.client_id) throw new Error('oidcSignIn: auth.sign_in must be enabled with an issuer and a client_id');
  if (!app.hasReplyDecorator('setCookie')) throw new Error('oidcSignIn: register @fastify/cookie first');

  const ctx = signInContext(options, issuer, auth.sign_in.client_id);
  const tags = ['auth'];

  if (/^https?:\/\/(0\.0\.0\.0|\[::\])(:|\/|$)/.test(ctx.base)) {
    app.log.warn(
      `${options.service}: provider sign-in sends ${ctx.callbackUrl} as its redirect URI: set server.public_url to the address users reach the service at`,
    );
  }
  // Discovery before the first user arrives; a provider that is down now is tried again at sign-in.
  ctx.provider
    .configuration()
    .catch((error: unknown) => app.log.warn({ err: error }, `${options.service}: OpenID provider discovery failed; retried at the next sign-in`));

  // Sign-out is also a plain HTML form (pages without script): its (empty) form body is accepted and ignored.
  // Only within these routes: the plugin's context is its own.
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded')) {
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_request, _body, done) => done(null, {}));
  }

  loginRoute(app, ctx, tags);
  callbackRoute(app, ctx, tags);
  logoutRoute(app, ctx, tags);
}
