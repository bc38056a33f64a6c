// The console's pages under /-/ (a top-level name the share reserves, as GitLab reserves `/-/`, so no file can
// take it): the sign-in page and form, sign-out, and the API keys page. The listing itself is the share's own
// GET /{path} (files/listing-html.ts). Assets live in assets.ts. Pages for browsers, not API: hidden from /api-docs.
import type { Accounts, SessionTokens } from '@boxyard/kit';
import { HttpError } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { endSession, startSession } from '../auth/auth-routes.ts';
import type { ApiKeyStore } from '../auth/api-key-store.ts';
import type { SessionCookiePolicy } from '../auth/session-cookie.ts';
import { asRole, keyPermissionsForRole } from '../auth/principal.ts';
import { renderKeysPage } from './keys-page.ts';
import { KEYS_PATH, SIGN_IN_PATH, SIGN_OUT_PATH, type Viewer } from './layout.ts';
import { sendPage } from './page-security.ts';
import { renderSignInPage, safeReturnTo } from './sign-in.ts';

export interface ConsoleRoutesOptions {
  accounts: Accounts;
  sessions: SessionTokens;
  cookie: SessionCookiePolicy;
  keys: ApiKeyStore;
  signIn?: { displayName: string } | undefined;
}

const FORM_LIMIT = 16 * 1024;

const viewerOf = (request: FastifyRequest, signIn: ConsoleRoutesOptions['signIn'], returnTo: string): Viewer => ({
  username: request.principal?.user?.username ?? null,
  via: request.principal?.via ?? 'anonymous',
  signIn,
  returnTo,
});

/** Sign-in: outside the credential check, so a stale Authorization a browser still sends never blocks it. */
export async function signInRoutes(app: FastifyInstance, options: ConsoleRoutesOptions): Promise<void> {
  // HTML forms post application/x-www-form-urlencoded; only these routes accept it.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.get(
    SIGN_IN_PATH,
    {
      schema: {
        hide: true,
        summary: 'The sign-in page (HTML form)',
        tags: ['console'],
        querystring: { type: 'object', properties: { return_to: { type: 'string' } } },
      },
    },
    async (request, reply) => {
      const returnTo = safeReturnTo((request.query as { return_to?: string }).return_to);
      return sendPage(reply, renderSignInPage({ username: null, via: 'anonymous', signIn: options.signIn, returnTo }));
    },
  );

  app.post(
    SIGN_IN_PATH,
    {
      schema: {
        hide: true,
        summary: 'Sign in from the HTML form (username, password, return_to); 303 back to return_to with the session cookie',
        tags: ['console'],
        consumes: ['application/x-www-form-urlencoded'],
      },
    },
    async (request, reply) => {
      const form = (request.body ?? {}) as Record<string, unknown>;
      const returnTo = safeReturnTo(form.return_to);
      const page = (status: number, error: string) =>
        sendPage(reply, renderSignInPage({ username: null, via: 'anonymous', signIn: options.signIn, returnTo }, error), status).header(
          'cache-control',
          'no-store',
        );
      const { username, password } = form;
      if (typeof username !== 'string' || typeof password !== 'string' || !username || !password || username.length > 256 || password.length > 1024) {
        return page(400, 'Enter a username and a password.');
      }
      const user = await options.accounts.verifyCredentials(username, password);
      if (!user) return page(401, 'Invalid username or password.');
      await startSession(options.sessions, options.cookie, reply, user);
      return reply.header('cache-control', 'no-store').redirect(returnTo, 303);
    },
  );
}

/** Pages behind the share's credential check (request.principal is set). */
export async function consoleRoutes(app: FastifyInstance, options: ConsoleRoutesOptions): Promise<void> {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_request, _body, done) => done(null, {}));

  app.post(
    SIGN_OUT_PATH,
    { schema: { hide: true, summary: 'Sign out from the HTML form; 303 to the share root', tags: ['console'] } },
    async (request, reply) => {
      await endSession(options.accounts, options.cookie, request, reply);
      return reply.header('cache-control', 'no-store').redirect('/', 303);
    },
  );

  app.get(KEYS_PATH, { schema: { hide: true, summary: 'The API keys page (HTML)', tags: ['console'] } }, async (request, reply) => {
    const principal = request.principal;
    const viewer = viewerOf(request, options.signIn, KEYS_PATH);
    if (principal.via === 'anonymous' || !principal.user) {
      return sendPage(reply.header('www-authenticate', 'Bearer realm="boxyard file-share"'), renderSignInPage(viewer), 401);
    }
    if (principal.via === 'api-key') throw new HttpError(403, 'Insufficient permissions: the API keys page is for users signed in as themselves');
    const keys = await options.keys.list(principal.user.id);
    return sendPage(reply, renderKeysPage(viewer, keys, keyPermissionsForRole[asRole(principal.user.role)]));
  });
}
