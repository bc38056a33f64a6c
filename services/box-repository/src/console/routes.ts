// The web console at `/`: server-rendered pages (public boxes and search, an organization, a box with its
// versions and the lines to use it, users for admins), sign-in and sign-out with the session cookie, and the two
// static assets. Pages are for browsers only: they answer HTML, and errors become HTML pages too.
import { readFileSync } from 'node:fs';
import { createOriginPolicy, HttpError, notFound, unauthorized } from '@boxyard/kit';
import { safeReturnPath } from '@boxyard/kit/oidc-sign-in/return-to.ts';
import { pageHeaders } from '@boxyard/kit/web/page-headers.ts';
import type { Html } from '@boxyard/kit/web/html.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findPath } from '../access/hierarchy.ts';
import { canManageBox } from '../access/permissions.ts';
import { principalOf, type Principal } from '../auth/principal.ts';
import { issueSession, signUp, USERNAME_REGEX, verifySignIn } from '../auth/routes.ts';
import { clearSessionCookie, sessionCookieOf, setSessionCookie } from '../auth/session-cookie.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf } from '../http/base-url.ts';
import { RESERVED_ORGANIZATION_NAMES } from '../http/schemas.ts';
import { isVersionString, VERSION_DETAIL } from '../versions/rubygems-version.ts';
import { WEBHOOK_EVENTS } from '../webhooks/event-types.ts';
import { versionsSection } from './versions-section.ts';
import { boxDetailPage, errorPage, homePage, organizationPage, signInPage, signUpPage, usersPage, webhooksPage } from './pages.ts';
import {
  allUsers,
  allWebhooks,
  latestDeliveries,
  listBoxes,
  membersOf,
  myOrganizations,
  parseBoxCursor,
  serviceAccountsOf,
  type BoxCursor,
} from './queries.ts';

const asset = (name: string) => readFileSync(new URL(`./public/${name}`, import.meta.url));
const ASSETS: Record<string, { body: Buffer; type: string }> = {
  'console.css': { body: asset('console.css'), type: 'text/css; charset=utf-8' },
  'console.js': { body: asset('console.js'), type: 'text/javascript; charset=utf-8' },
};

const hide = { schema: { hide: true } } as const;
/**
 * Only a path on this site: never `//host` or a scheme (sign-in must not become an open redirect), percent-encoded
 * so it fits the Location header (a raw character beyond Latin-1 there was a 500). The kit's rule.
 */
const safeReturn = (value: unknown) => safeReturnPath(value);

const pathOf = (request: FastifyRequest) => request.url;

const sendPage = (reply: FastifyReply, page: Html, status = 200) =>
  pageHeaders(reply).status(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page.value);

/** Renders a page; a refusal or a missing item becomes an HTML error page with the same status. */
const page =
  (ctx: ServiceContext, render: (request: FastifyRequest, principal: Principal | null) => Promise<Html>) =>
  async (request: FastifyRequest, reply: FastifyReply) => {
    let principal: Principal | null = null;
    try {
      principal = await principalOf(ctx, request);
      return sendPage(reply, await render(request, principal));
    } catch (error) {
      if (!(error instanceof HttpError) || error.statusCode >= 500) throw error;
      return sendPage(reply, errorPage({ principal, path: pathOf(request) }, error.statusCode, error.message), error.statusCode);
    }
  };

/** A form or query field as a string of at most `max` characters ('' when absent). */
const field = (form: Record<string, unknown>, name: string, max: number) => (typeof form[name] === 'string' ? (form[name] as string).slice(0, max) : '');

type OriginPolicy = ReturnType<typeof createOriginPolicy>;

export async function consoleRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  // The sign-in form posts urlencoded fields; only these routes read that media type.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  // Signing in (or up) from another site's page (login CSRF) is refused like any cross-site write.
  const origins = createOriginPolicy({ publicUrl: ctx.config.server.public_url });
  assetRoute(app);
  boxPages(app, ctx);
  adminPages(app, ctx);
  signInRoutes(app, ctx, origins);
  signUpRoutes(app, ctx, origins);
  signOutRoute(app, ctx);
}

function assetRoute(app: FastifyInstance): void {
  // Assets are fixed files read at start: not worth a rate-limit write per request (as the terminal's page).
  app.get('/console/assets/:file', { ...hide, config: { rateLimit: false } }, async (request: FastifyRequest<{ Params: { file: string } }>, reply) => {
    const file = Object.hasOwn(ASSETS, request.params.file) ? ASSETS[request.params.file] : undefined;
    if (!file) throw notFound(`No asset ${request.params.file}`);
    return pageHeaders(reply).header('cache-control', 'public, max-age=3600').type(file.type).send(file.body);
  });
}

/** The public boxes and search, an organization, a box with its versions. */ function boxPages(app: FastifyInstance, ctx: ServiceContext): void {
  app.get(
    '/',
    hide,
    page(ctx, async (request, principal) => {
      const query = request.query as Record<string, unknown>;
      const search = typeof query.q === 'string' ? query.q.trim().slice(0, 200) : '';
      const after = afterOf(query);
      const listed = await listBoxes(ctx, principal, { search, after });
      return homePage(
        { principal, path: pathOf(request), search },
        {
          boxes: listed.boxes,
          next: listed.next,
          after: after ? (query.after as string) : undefined,
          organizations: await myOrganizations(ctx, principal),
        },
      );
    }),
  );

  app.get(
    '/:org',
    hide,
    page(ctx, async (request, principal) => {
      const { org: name } = request.params as { org: string };
      if (RESERVED_ORGANIZATION_NAMES.includes(name.toLowerCase())) throw notFound(`No page ${request.url.split('?')[0]}`);
      const found = await findPath(ctx, request, { org: name });
      const org = found.org;
      const query = request.query as Record<string, unknown>;
      const after = afterOf(query);
      const listed = await listBoxes(ctx, principal, { organizationId: org.id, after });
      const isMember = found.role !== null || found.isGlobalAdmin;
      const isOrgAdmin = found.role === 'admin' || found.isGlobalAdmin;
      return organizationPage(
        { principal, path: pathOf(request) },
        {
          org,
          role: found.role,
          isGlobalAdmin: found.isGlobalAdmin,
          boxes: listed.boxes,
          next: listed.next,
          after: after ? (query.after as string) : undefined,
          members: isMember && principal?.kind === 'user' ? await membersOf(ctx, org.id) : null,
          serviceAccounts: isOrgAdmin && principal?.kind === 'user' ? await serviceAccountsOf(ctx, org.id) : null,
        },
      );
    }),
  );

  app.get(
    '/:org/boxes/:box',
    hide,
    page(ctx, async (request, principal) => {
      const params = request.params as { org: string; box: string };
      const found = await findPath(ctx, request, params);
      const box = found.box!;
      const member = found.role !== null || found.isGlobalAdmin;
      const olderThan = olderThanOf(request.query as Record<string, unknown>);
      const canManage = canManageBox(found, box);
      const versions = await versionsSection(ctx, found, box, { member, canManage, olderThan });
      return boxDetailPage(
        { principal, path: pathOf(request) },
        {
          org: found.org,
          box,
          versions,
          olderThan,
          canManage,
          baseUrl: baseUrlOf(ctx, request),
        },
      );
    }),
  );
}

/** `?after=<org>/<box>` of a box list: where the previous page ended; anything else is the caller's mistake. */
function afterOf(query: Record<string, unknown>): BoxCursor | undefined {
  const value = query.after;
  if (value === undefined || value === '') return undefined;
  const cursor = typeof value === 'string' ? parseBoxCursor(value) : undefined;
  if (!cursor) throw new HttpError(400, 'after must be <organization>/<box>, as the Next link writes it');
  return cursor;
}

/** `?older_than=<version>` of a box page: a version number or nothing; anything else is the caller's mistake. */
function olderThanOf(query: Record<string, unknown>): string | undefined {
  const value = query.older_than;
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !isVersionString(value)) throw new HttpError(400, `older_than must be ${VERSION_DETAIL}`);
  return value;
}

function adminPages(app: FastifyInstance, ctx: ServiceContext): void {
  app.get(
    '/console/users',
    hide,
    page(ctx, async (request, principal) => {
      if (!principal) throw unauthorized('Sign in to see the users');
      if (principal.kind !== 'user' || !principal.isAdmin) throw new HttpError(403, 'Only administrators see the users');
      return usersPage({ principal, path: pathOf(request) }, await allUsers(ctx));
    }),
  );

  app.get(
    '/console/webhooks',
    hide,
    page(ctx, async (request, principal) => {
      if (!principal) throw unauthorized('Sign in to see the webhooks');
      if (principal.kind !== 'user' || !principal.isAdmin) throw new HttpError(403, 'Only administrators manage webhooks');
      return webhooksPage(
        { principal, path: pathOf(request) },
        { events: WEBHOOK_EVENTS, webhooks: await allWebhooks(ctx), deliveries: await latestDeliveries(ctx, 20) },
      );
    }),
  );
}

function signInRoutes(app: FastifyInstance, ctx: ServiceContext, origins: OriginPolicy): void {
  app.get(
    '/console/sign-in',
    hide,
    page(ctx, async (request, principal) => {
      const returnTo = safeReturn((request.query as Record<string, unknown>).return_to);
      return signInPage({ principal, path: pathOf(request) }, { returnTo });
    }),
  );

  app.post('/console/sign-in', { ...hide, preHandler: origins.check }, async (request, reply) => {
    const form = (request.body ?? {}) as Record<string, unknown>;
    const username = typeof form.username === 'string' ? form.username.slice(0, 254) : '';
    const password = typeof form.password === 'string' ? form.password.slice(0, 1024) : '';
    const returnTo = safeReturn(form.return_to);
    const principal = username && password ? await verifySignIn(ctx, username, password) : null;
    if (!principal) {
      return sendPage(reply, signInPage({ principal: null, path: '/console/sign-in' }, { returnTo, username, error: 'Invalid username or password.' }), 401);
    }
    const issued = await issueSession(ctx, principal, false);
    setSessionCookie(ctx, request, reply, issued.access_token, new Date(issued.expires_at));
    return reply.redirect(returnTo, 303);
  });
}

// Sign-up, e.g. from an invitation's link (POST /api/auth/invite): the account is made by the API's own rules,
// then signed in with the cookie and sent to the organization it joined.
function signUpRoutes(app: FastifyInstance, ctx: ServiceContext, origins: OriginPolicy): void {
  app.get(
    '/console/sign-up',
    hide,
    page(ctx, async (request, principal) => {
      const query = request.query as Record<string, unknown>;
      const invitationToken = field(query, 'invitationToken', 128) || field(query, 'invitation_token', 128) || undefined; // the API's hook may have snake-cased the key
      const organization = field(query, 'organization', 254) || undefined;
      return signUpPage({ principal, path: pathOf(request) }, { ...(invitationToken ? { invitationToken } : {}), ...(organization ? { organization } : {}) });
    }),
  );
  app.post('/console/sign-up', { ...hide, preHandler: origins.check }, async (request, reply) => {
    const form = (request.body ?? {}) as Record<string, unknown>;
    const input = { username: field(form, 'username', 64), email: field(form, 'email', 254), password: field(form, 'password', 1024) };
    const invitationToken = field(form, 'invitation_token', 128) || undefined;
    const again = (status: number, error: string) =>
      sendPage(
        reply,
        signUpPage(
          { principal: null, path: '/console/sign-up' },
          { ...(invitationToken ? { invitationToken } : {}), username: input.username, email: input.email, error },
        ),
        status,
      );
    if (!USERNAME_REGEX.test(input.username)) return again(422, 'A username is 1 to 64 letters, digits, dots, dashes or underscores.');
    if (!/^[^\s@]+@[^\s@]+$/.test(input.email)) return again(422, 'Give an e-mail address.');
    let joined: string | undefined;
    try {
      ({ joined } = await signUp(ctx, { ...input, ...(invitationToken ? { invitationToken } : {}) }));
    } catch (error) {
      if (!(error instanceof HttpError) || error.statusCode >= 500) throw error;
      const details = error.errors.map((e) => e.detail).filter(Boolean);
      return again(error.statusCode, [error.message, ...details].join(': '));
    }
    const principal = await verifySignIn(ctx, input.username, input.password);
    if (!principal) return reply.redirect('/console/sign-in', 303);
    const issued = await issueSession(ctx, principal, false);
    setSessionCookie(ctx, request, reply, issued.access_token, new Date(issued.expires_at));
    return reply.redirect(joined ? `/${encodeURIComponent(joined)}` : '/', 303);
  });
}

function signOutRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.post('/console/sign-out', hide, async (request, reply) => {
    // A stale or missing cookie signs out too; a valid one is revoked, so a copy of it stops working as well.
    if (sessionCookieOf(request)) {
      const principal = await principalOf(ctx, request);
      if (principal?.session) await ctx.accounts.revokeSession(principal.session.jti, principal.session.expiresAt);
    }
    clearSessionCookie(ctx, request, reply);
    return reply.redirect('/', 303);
  });
}
