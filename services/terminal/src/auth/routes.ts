// POST /auth/login/basic, POST /auth/logout, GET /auth/status, GET /auth/methods.
import { unauthorized, type Accounts } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { envelope, errors, ok, userSchema } from '../http/envelope.ts';
import { AUTH_COOKIE, type Auth } from './plugin.ts';

interface LoginBody {
  username: string;
  password: string;
}

/** A provider sign-in (auth.sign_in) as GET /auth/methods lists it. */
export interface SignInMethod {
  type: string;
  method: string;
  path: string;
  logout: string;
  display_name: string;
}

interface AuthRouteDeps {
  auth: Auth;
  accounts: Accounts;
  signIn?: SignInMethod | undefined;
}

const tags = ['auth'];

export function authRoutes(app: FastifyInstance, deps: AuthRouteDeps): void {
  loginRoute(app, deps);
  logoutRoute(app, deps);
  statusRoute(app, deps);
  methodsRoute(app, deps);
}

function loginRoute(app: FastifyInstance, { auth, accounts }: AuthRouteDeps): void {
  app.post<{ Body: LoginBody }>(
    '/auth/login/basic',
    {
      schema: {
        tags,
        summary: 'Sign in with a username and password: answers the session JWT and sets it in the auth_token cookie',
        description:
          'The JWT is `data.token` and the `auth_token` cookie (HttpOnly, Secure, SameSite=Strict) alike. Present it in that cookie (`Cookie: auth_token=<token>`) on the other routes and on the WebSocket upgrade.',
        body: {
          type: 'object',
          required: ['username', 'password'],
          additionalProperties: false,
          properties: { username: { type: 'string', minLength: 1, maxLength: 256 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
        },
        response: {
          200: envelope(
            {
              type: 'object',
              required: ['user', 'token', 'cookie', 'expires_at'],
              properties: {
                user: userSchema,
                token: { type: 'string', description: 'The session JWT (the value of the auth_token cookie)' },
                cookie: { type: 'string', const: AUTH_COOKIE, description: 'The cookie to present the token in' },
                expires_at: { type: 'string', format: 'date-time' },
              },
            },
            'Signed in; Set-Cookie: auth_token (HttpOnly, Secure, SameSite=Strict)',
          ),
          ...errors(400, 401, 429),
        },
      },
    },
    async (request, reply) => {
      const user = await accounts.verifyCredentials(request.body.username, request.body.password);
      if (!user) throw unauthorized('Invalid username or password');
      const issued = await auth.signIn(reply, user);
      reply.header('cache-control', 'no-store');
      return ok('Signed in', {
        user: { id: user.id, username: user.username, role: user.role, email: user.email },
        token: issued.token,
        cookie: AUTH_COOKIE,
        expires_at: issued.expiresAt.toISOString(),
      });
    },
  );
}

function logoutRoute(app: FastifyInstance, { auth, accounts }: AuthRouteDeps): void {
  app.post(
    '/auth/logout',
    {
      preHandler: auth.optionalUser,
      schema: {
        tags,
        summary: 'Sign out: revokes the session token and clears the cookie',
        response: { 200: envelope({ type: 'object', properties: {} }), ...errors(429) },
      },
    },
    async (request, reply) => {
      if (request.user) await accounts.revokeSession(request.user.jti, request.user.expiresAt);
      auth.signOut(reply);
      return ok(request.user ? 'Signed out' : 'Not signed in', {});
    },
  );
}

function statusRoute(app: FastifyInstance, { auth }: AuthRouteDeps): void {
  app.get(
    '/auth/status',
    {
      preHandler: auth.optionalUser,
      schema: {
        tags,
        summary: 'Whether the caller is signed in, as whom, and how the token is presented',
        description:
          "`cookie` names the cookie a session token is presented in (`auth_token`); when signed in, `presented_in` says how this request presented its credential: `cookie` (the session JWT) or `authorization` (an identity provider's access token, `Authorization: Bearer|DPoP`).",
        response: {
          200: envelope({
            type: 'object',
            required: ['authenticated', 'cookie'],
            properties: {
              authenticated: { type: 'boolean' },
              cookie: { type: 'string', const: AUTH_COOKIE },
              presented_in: { type: 'string', enum: ['cookie', 'authorization'] },
              user: userSchema,
              expires_at: { type: 'string', format: 'date-time' },
            },
          }),
          ...errors(429),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const user = request.user;
      if (!user) return ok('Not signed in', { authenticated: false, cookie: AUTH_COOKIE });
      return ok('Signed in', {
        authenticated: true,
        cookie: AUTH_COOKIE,
        presented_in: user.presentedIn,
        user: { id: user.id, username: user.username, role: user.role },
        expires_at: user.expiresAt.toISOString(),
      });
    },
  );
}

function methodsRoute(app: FastifyInstance, deps: AuthRouteDeps): void {
  app.get(
    '/auth/methods',
    {
      schema: {
        tags,
        summary: 'The available sign-in methods',
        response: {
          200: envelope({
            type: 'object',
            properties: {
              methods: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    type: { type: 'string' },
                    path: { type: 'string' },
                    method: { type: 'string' },
                    fields: { type: 'array', items: { type: 'string' } },
                    cookie: { type: 'string' },
                    logout: { type: 'string' },
                    display_name: { type: 'string' },
                  },
                },
              },
            },
          }),
          ...errors(429),
        },
      },
    },
    async () =>
      ok('Available authentication methods', {
        methods: [
          { type: 'basic', method: 'POST', path: '/auth/login/basic', fields: ['username', 'password'], cookie: 'auth_token' },
          ...(deps.signIn ? [{ ...deps.signIn, cookie: 'auth_token' }] : []),
        ],
      }),
  );
}
