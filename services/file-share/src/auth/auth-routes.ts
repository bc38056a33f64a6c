// GET /auth/methods, POST /auth/login/basic, POST /auth/logout, and the admins' user management
// (GET/POST /api/users; not in the seed, but without it the `user` role could never be given to anyone).
import { checkPassword, UsernameTakenError, type Accounts, type SessionTokens } from '@boxyard/kit';
import { badRequest, conflict, HttpError } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { envelopeSchema, errorSchema, ok } from '../http/envelope.ts';
import { SESSION_COOKIE } from './authenticate.ts';
import type { SessionCookiePolicy } from './session-cookie.ts';
import { asRole, CHALLENGE, keyPermissionsForRole, requireAdmin, rolePermissions, ROLES } from './principal.ts';

export interface AuthRoutesOptions {
  accounts: Accounts;
  sessions: SessionTokens;
  cookie: SessionCookiePolicy;
  publicRead: boolean;
  /** Provider sign-in (auth.sign_in), listed by GET /auth/methods when enabled. */
  signIn?: Record<string, unknown> | undefined;
}

/** Signs a user in: the session JWT and its HttpOnly cookie. Password and provider sign-in both end here. */
export async function startSession(
  sessions: SessionTokens,
  cookie: SessionCookiePolicy,
  reply: FastifyReply,
  user: { id: string; username: string; role: string },
) {
  const role = asRole(user.role);
  const issued = await sessions.sign(user.id, { username: user.username, role });
  reply.setCookie(SESSION_COOKIE, issued.token, { ...cookie.options(reply.request), expires: issued.expiresAt });
  return { ...issued, role };
}

/** Ends the caller's session (revoked until it would have expired) and clears its cookie. */
export async function endSession(accounts: Accounts, cookie: SessionCookiePolicy, request: FastifyRequest, reply: FastifyReply): Promise<string | undefined> {
  const session = request.principal.session;
  if (session) await accounts.revokeSession(session.jti, session.expiresAt);
  reply.clearCookie(SESSION_COOKIE, cookie.options(request));
  return session?.jti;
}

const userSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    username: { type: 'string' },
    email: { type: ['string', 'null'] },
    role: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'username', 'email', 'role', 'createdAt'],
};

const userView = (user: { id: string; username: string; email: string | null; role: string; created_at: Date }) => ({
  id: user.id,
  username: user.username,
  email: user.email,
  role: user.role,
  createdAt: user.created_at.toISOString(),
});

export async function authRoutes(app: FastifyInstance, options: AuthRoutesOptions): Promise<void> {
  methodsRoute(app, options);
  signInRoute(app, options);
  signOutRoute(app, options);
  listUsersRoute(app, options);
  createUserRoute(app, options);
}

function methodsRoute(app: FastifyInstance, options: AuthRoutesOptions): void {
  app.get('/auth/methods', { schema: { summary: 'Available authentication methods', tags: ['auth'] } }, async () =>
    ok('Authentication methods', {
      methods: [
        { type: 'api_key', description: 'Authorization: Bearer <API key> (recommended for automation)', header: 'Authorization', scheme: 'Bearer' },
        {
          type: 'session',
          description:
            'POST /auth/login/basic with {username, password}; the JWT comes back in the body (send it as Authorization: Bearer) and as the HttpOnly auth_token cookie',
          login: '/auth/login/basic',
          logout: '/auth/logout',
          cookie: SESSION_COOKIE,
          scheme: 'Bearer',
        },
        { type: 'basic', description: 'HTTP Basic with username and password (header or URL userinfo)', header: 'Authorization', scheme: 'Basic' },
        ...(options.signIn
          ? [{ ...options.signIn, description: 'Browser sign-in with the OpenID provider; ends in the auth_token cookie', cookie: SESSION_COOKIE }]
          : []),
      ],
      anonymousRead: options.publicRead,
      roles: Object.fromEntries(ROLES.map((role) => [role, { permissions: rolePermissions[role], apiKeyPermissions: keyPermissionsForRole[role] }])),
    }),
  );
}

function signInRoute(app: FastifyInstance, { accounts, sessions, cookie }: AuthRoutesOptions): void {
  app.post(
    '/auth/login/basic',
    {
      schema: {
        summary: 'Sign in with username and password; returns a session JWT and sets the auth_token cookie',
        tags: ['auth'],
        body: {
          type: 'object',
          properties: { username: { type: 'string', minLength: 1, maxLength: 256 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
          required: ['username', 'password'],
          additionalProperties: false,
        },
        response: {
          200: envelopeSchema({
            type: 'object',
            properties: {
              token: { type: 'string' },
              tokenType: { type: 'string' },
              expiresAt: { type: 'string', format: 'date-time' },
              user: { type: 'object', properties: { id: { type: 'string' }, username: { type: 'string' }, role: { type: 'string' } } },
            },
          }),
          401: errorSchema,
        },
      },
    },
    async (request, reply) => {
      const { username, password } = request.body as { username: string; password: string };
      const user = await accounts.verifyCredentials(username, password);
      if (!user) throw new HttpError(401, 'Invalid username or password', { headers: { 'www-authenticate': CHALLENGE } });
      const { role, ...issued } = await startSession(sessions, cookie, reply, user);
      reply.header('cache-control', 'no-store');
      return ok('Signed in', {
        token: issued.token,
        tokenType: 'Bearer',
        expiresAt: issued.expiresAt.toISOString(),
        user: { id: user.id, username: user.username, role },
      });
    },
  );
}

function signOutRoute(app: FastifyInstance, { accounts, cookie }: AuthRoutesOptions): void {
  app.post('/auth/logout', { schema: { summary: 'Sign out: revokes the session token and clears the cookie', tags: ['auth'] } }, async (request, reply) => {
    const ended = await endSession(accounts, cookie, request, reply);
    return ok(ended ? 'Signed out' : 'No session to end', { revoked: Boolean(ended) });
  });
}

function listUsersRoute(app: FastifyInstance, { accounts }: AuthRoutesOptions): void {
  app.get('/api/users', { schema: { summary: 'List users (admins)', tags: ['users'] } }, async (request) => {
    requireAdmin(request.principal);
    const rows = await accounts.list();
    return ok('Users', { users: rows.map(userView) });
  });
}

function createUserRoute(app: FastifyInstance, { accounts }: AuthRoutesOptions): void {
  app.post(
    '/api/users',
    {
      schema: {
        summary: 'Create a user (admins)',
        description: 'Roles: `admin` (downloads, uploads, delete; any API key) and `user` (downloads, uploads; download-only API keys).',
        tags: ['users'],
        body: {
          type: 'object',
          properties: {
            username: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$' },
            password: { type: 'string', maxLength: 1024 },
            role: { type: 'string', enum: [...ROLES] },
            email: { type: 'string', format: 'email', maxLength: 320 },
          },
          required: ['username', 'password', 'role'],
          additionalProperties: false,
        },
        response: { 201: envelopeSchema({ type: 'object', properties: { user: userSchema } }, 'The user, created'), 409: {} },
      },
    },
    async (request, reply) => {
      requireAdmin(request.principal);
      const body = request.body as { username: string; password: string; role: string; email?: string };
      const failures = checkPassword(body.password);
      if (failures.length > 0) {
        throw badRequest(
          'Password does not meet the policy',
          failures.map((f) => ({ pointer: '/password', rule: f.rule, params: {}, detail: f.detail })),
        );
      }
      try {
        const user = await accounts.create({ username: body.username, password: body.password, role: body.role, email: body.email ?? null });
        return reply.status(201).send(ok('User created', { user: userView(user) }));
      } catch (error) {
        if (error instanceof UsernameTakenError) throw conflict('Username or email already taken');
        throw error;
      }
    },
  );
}
