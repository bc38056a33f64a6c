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
import * as client from 'openid-client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabasePool } from 'slonik';
import type { User } from '../accounts/accounts.ts';
import type { AuthConfig } from '../config/auth-section.ts';
import { HttpError } from '../http/http-error.ts';
import { createIdentityLinks, DeletedIdentityError, type ProviderIdentity, type RoleMapping } from './identities.ts';
import { continuePage, errorPage, noStore, sendPage } from './pages.ts';
import { createProviderClient, ProviderUnavailableError, type ProviderClient } from './provider.ts';
import { safeReturnPath } from './return-to.ts';
import { createTransactionSealer, TRANSACTION_TTL_SECONDS, transactionCookieOptions } from './transaction.ts';
import { withoutTrailingSlashes } from '../text/trim.ts';

export const LOGIN_PATH = '/auth/oidc/login';
export const CALLBACK_PATH = '/auth/oidc/callback';
export const LOGOUT_PATH = '/auth/oidc/logout';

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

/** What a service's `GET /auth/methods` lists for this sign-in, when enabled. */
export function oidcSignInMethod(auth: AuthConfig) {
  return { type: 'oidc', method: 'GET', path: `${LOGIN_PATH}?return_to=/`, logout: LOGOUT_PATH, display_name: auth.sign_in.display_name };
}

class SignInFailure extends Error {
  override name = 'SignInFailure';
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  constructor(status: number, title: string, detail: string) {
    super(`${title}: ${detail}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

const wants = (request: FastifyRequest, type: 'text/html' | 'application/json') => {
  const accept = request.headers.accept ?? '';
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  if (type === 'text/html') return html !== -1 && (json === -1 || html < json);
  return json !== -1 && (html === -1 || json < html);
};

const stringClaim = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : undefined);
const groupsOf = (value: unknown): string[] => (Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : typeof value === 'string' ? [value] : []);

/** Why a code exchange failed, in words for the person signing in; the details go to the log. */
function exchangeFailure(error: unknown): SignInFailure {
  if (error instanceof client.ResponseBodyError) {
    return new SignInFailure(400, 'Sign-in failed', `The provider refused the authorization code (${error.error}${error.error_description ? `: ${error.error_description}` : ''}). It may have been used already or expired; sign in again.`);
  }
  if (error instanceof client.AuthorizationResponseError) {
    return new SignInFailure(401, 'Sign-in was not completed', `The provider answered ${error.error}${error.error_description ? `: ${error.error_description}` : ''}.`);
  }
  if (error instanceof client.ClientError || error instanceof client.WWWAuthenticateChallengeError) {
    return new SignInFailure(401, 'Sign-in refused', `The provider's response failed verification (${error.message}).`);
  }
  return new SignInFailure(502, 'Sign-in failed', 'The identity provider could not be reached; try again later.');
}

export async function oidcSignIn(app: FastifyInstance, options: OidcSignInOptions): Promise<void> {
  const { auth } = options;
  const issuer = auth.sign_in.issuer ?? auth.resource_server.issuer;
  if (!auth.sign_in.enabled || !issuer || !auth.sign_in.client_id) throw new Error('oidcSignIn: auth.sign_in must be enabled with an issuer and a client_id');
  if (!app.hasReplyDecorator('setCookie')) throw new Error('oidcSignIn: register @fastify/cookie first');

  const provider: ProviderClient = createProviderClient({ issuer, clientId: auth.sign_in.client_id, clientSecret: auth.sign_in.client_secret });
  const links = createIdentityLinks(options.pool);
  const sealer = createTransactionSealer(options.secret, options.service);
  const cookieName = `boxyard_oidc_${options.service.replace(/[^A-Za-z0-9]/g, '_')}`;
  const base = withoutTrailingSlashes(options.publicUrl);
  const callbackUrl = `${base}${CALLBACK_PATH}`;
  const postLogoutUrl = `${base}/`;
  const claimNames = auth.resource_server.claims;
  const mapping: RoleMapping = { admin: options.roles?.admin ?? 'admin', user: options.roles?.user ?? 'user', adminGroups: auth.resource_server.admin_groups };
  const tags = ['auth'];

  if (/^https?:\/\/(0\.0\.0\.0|\[::\])(:|\/|$)/.test(base)) {
    app.log.warn(`${options.service}: provider sign-in sends ${callbackUrl} as its redirect URI: set server.public_url to the address users reach the service at`);
  }
  // Discovery before the first user arrives; a provider that is down now is tried again at sign-in.
  provider.configuration().catch((error: unknown) => app.log.warn({ err: error }, `${options.service}: OpenID provider discovery failed; retried at the next sign-in`));

  const configuration = async () => {
    try {
      return await provider.configuration();
    } catch (error) {
      if (error instanceof ProviderUnavailableError) throw new SignInFailure(502, 'Sign-in unavailable', 'The identity provider could not be reached; try again later.');
      throw error;
    }
  };

  const fail = (request: FastifyRequest, reply: FastifyReply, failure: SignInFailure, retryTo?: string) => {
    request.log.info({ status: failure.status, reason: failure.message }, 'oidc sign-in refused');
    if (wants(request, 'text/html')) {
      const retry = retryTo === undefined ? undefined : `${LOGIN_PATH}?return_to=${encodeURIComponent(retryTo)}`;
      return sendPage(reply, failure.status, errorPage(failure.title, failure.detail, retry));
    }
    throw new HttpError(failure.status, failure.message);
  };

  /** ID token claims, completed from userinfo when a mapped claim is missing (some providers keep them there). */
  async function claimsOf(config: client.Configuration, tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers, request: FastifyRequest) {
    const idClaims = tokens.claims();
    if (!idClaims) throw new SignInFailure(401, 'Sign-in refused', 'The provider returned no ID token.');
    // Groups matter only when they make admins: a provider without a groups claim costs no userinfo call then.
    const wanted = [claimNames.username, claimNames.email, ...(mapping.adminGroups.length > 0 ? [claimNames.groups] : [])];
    const missing = wanted.some((name) => !(name in idClaims));
    if (!missing || !config.serverMetadata().userinfo_endpoint) return idClaims;
    try {
      const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
      // Signed ID token claims win; userinfo only fills what they lack.
      return { ...info, ...idClaims };
    } catch (error) {
      request.log.warn({ err: error }, 'oidc sign-in: userinfo failed; using the ID token claims alone');
      return idClaims;
    }
  }

  // Sign-out is also a plain HTML form (pages without script): its (empty) form body is accepted and ignored.
  // Only within these routes: the plugin's context is its own.
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded')) {
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_request, _body, done) => done(null, {}));
  }

  app.get<{ Querystring: { return_to?: string } }>(
    LOGIN_PATH,
    {
      schema: {
        tags,
        summary: `Sign in with ${auth.sign_in.display_name} (OpenID Connect): 303 to the provider, with a short-lived sign-in cookie`,
        querystring: { type: 'object', properties: { return_to: { type: 'string', maxLength: 2048, description: 'A path on this service to return to (default /); anything else is ignored' } } },
      },
    },
    async (request, reply) => {
      try {
        const returnTo = safeReturnPath(request.query.return_to);
        if (request.query.return_to !== undefined && returnTo !== request.query.return_to) request.log.info({ returnTo: request.query.return_to }, 'oidc sign-in: return_to ignored (not a path on this service)');
        const config = await configuration();
        const state = client.randomState();
        const nonce = client.randomNonce();
        const codeVerifier = client.randomPKCECodeVerifier();
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: callbackUrl,
          scope: auth.sign_in.scopes.join(' '),
          state,
          nonce,
          // PKCE always, whether or not the provider advertises it.
          code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: 'S256',
        });
        reply.setCookie(cookieName, await sealer.seal({ state, nonce, codeVerifier, returnTo }), transactionCookieOptions(TRANSACTION_TTL_SECONDS));
        return noStore(reply).redirect(url.href, 303);
      } catch (error) {
        if (error instanceof SignInFailure) return fail(request, reply, error);
        throw error;
      }
    },
  );

  app.get<{ Querystring: Record<string, string | undefined> }>(
    CALLBACK_PATH,
    {
      schema: {
        tags,
        summary: 'Where the provider sends the browser back: finishes the sign-in and sets the session cookie',
        querystring: { type: 'object', properties: { code: { type: 'string' }, state: { type: 'string' }, iss: { type: 'string' }, error: { type: 'string' }, error_description: { type: 'string' } } },
      },
    },
    async (request, reply) => {
      const transaction = await sealer.open(request.cookies[cookieName]);
      // Single use: whatever happens next, this browser's transaction is over.
      reply.clearCookie(cookieName, { ...transactionCookieOptions(0), maxAge: undefined });
      try {
        if (!transaction) throw new SignInFailure(400, 'No sign-in in progress', 'This browser has no sign-in waiting for this response: it expired, was already finished, or was started elsewhere. Sign in again.');
        const query = request.query;
        if (query.state !== transaction.state) throw new SignInFailure(400, 'Sign-in refused', 'The response does not belong to the sign-in started in this browser (state mismatch).');
        if (query.error) {
          throw new SignInFailure(401, 'Sign-in was not completed', `The provider answered ${query.error}${query.error_description ? `: ${query.error_description}` : ''}.`);
        }
        if (!(await links.redeemState(transaction.state, new Date(Date.now() + TRANSACTION_TTL_SECONDS * 1000)))) {
          throw new SignInFailure(400, 'Sign-in refused', 'This sign-in response was already used.');
        }
        const config = await configuration();
        // The URL the provider redirected to, from our public URL (not the Host header): openid-client derives
        // the token request's redirect_uri from it, and checks state and iss on its query.
        const currentUrl = new URL(callbackUrl);
        for (const [name, value] of Object.entries(query)) if (typeof value === 'string') currentUrl.searchParams.set(name, value);
        let tokens;
        try {
          tokens = await client.authorizationCodeGrant(config, currentUrl, { pkceCodeVerifier: transaction.codeVerifier, expectedState: transaction.state, expectedNonce: transaction.nonce, idTokenExpected: true });
        } catch (error) {
          request.log.info({ err: error }, 'oidc sign-in: code exchange failed');
          throw exchangeFailure(error);
        }
        const claims = await claimsOf(config, tokens, request);
        const identity: ProviderIdentity = {
          issuer: claims.iss,
          subject: claims.sub,
          username: stringClaim(claims[claimNames.username]) ?? claims.sub,
          email: stringClaim(claims[claimNames.email]),
          groups: groupsOf(claims[claimNames.groups]),
        };
        const user = await links.signIn(identity, mapping).catch((error: unknown) => {
          if (error instanceof DeletedIdentityError) throw new SignInFailure(403, 'Sign-in refused', `${error.message}.`);
          throw error;
        });
        if (user.disabled) throw new SignInFailure(403, 'Sign-in refused', 'This account is disabled.');
        const session = await options.session.start(reply, user);
        if (tokens.id_token) await links.rememberSession(session.jti, tokens.id_token, session.expiresAt);
        request.log.info({ userId: user.id, issuer: identity.issuer }, 'oidc sign-in');
        // After the provider's cross-site redirect, a browser withholds SameSite=Strict cookies along the rest of
        // the redirect chain; a page that moves on by itself makes the next request same-site, cookie included.
        if (request.headers['sec-fetch-site'] === 'cross-site') return sendPage(reply, 200, continuePage(transaction.returnTo, 'Signed in'));
        return noStore(reply).redirect(transaction.returnTo, 303);
      } catch (error) {
        if (error instanceof SignInFailure) return fail(request, reply, error, transaction?.returnTo ?? '/');
        throw error;
      }
    },
  );

  app.post(
    LOGOUT_PATH,
    {
      schema: {
        tags,
        summary: `Sign out of this service and of ${auth.sign_in.display_name}`,
        description:
          'Revokes the session and clears its cookie, then (for a session signed in with the provider) redirects (303) to the ' +
          "provider's end_session_endpoint with id_token_hint and post_logout_redirect_uri. With `Accept: application/json` " +
          'it answers 200 with that URL as `end_session_url` instead, for pages that navigate themselves; a browser form ' +
          '(`Accept: text/html`) gets a page that goes there by itself (a redirect would meet the CSP form-action of strict pages).',
      },
    },
    async (request, reply) => {
      const jti = await options.session.end(request, reply);
      const idToken = jti ? await links.takeSession(jti) : undefined;
      let endSessionUrl: string | undefined;
      if (idToken) {
        try {
          const config = await provider.configuration();
          if (config.serverMetadata().end_session_endpoint) {
            endSessionUrl = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutUrl }).href;
          }
        } catch (error) {
          // The service session is over either way; the provider's will end when it expires there.
          request.log.warn({ err: error }, 'oidc sign-out: provider unavailable; only the service session was ended');
        }
      }
      noStore(reply);
      if (wants(request, 'application/json')) return options.ok(jti ? 'Signed out' : 'Not signed in', { signed_out: Boolean(jti), end_session_url: endSessionUrl ?? null });
      // A browser's form: browsers apply the page's CSP form-action to the redirects that follow a form post, so
      // a strict page ('self') could not reach the provider through a 303. A page that moves on by itself can.
      if (wants(request, 'text/html')) return sendPage(reply, 200, continuePage(endSessionUrl ?? '/', endSessionUrl ? `Signed out; signing out of ${auth.sign_in.display_name}` : 'Signed out'));
      return reply.redirect(endSessionUrl ?? '/', 303);
    },
  );
}
