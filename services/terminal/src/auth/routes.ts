// POST /auth/login/basic, POST /auth/logout, GET /auth/status, GET /auth/methods.
import { unauthorized, type Accounts } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { envelope, errors, ok, userSchema } from '../http/envelope.ts';
import type { Auth } from './plugin.ts';

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
        summary: 'Sign in with a username and password; the session JWT is set in the auth_token cookie',
        body: {
          type: 'object',
          required: ['username', 'password'],
          additionalProperties: false,
          properties: { username: { type: 'string', minLength: 1, maxLength: 256 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
        },
        response: {
          200: envelope({ type: 'object', properties: { user: userSchema, expires_at: { type: 'string', format: 'date-time' } } }, 'Signed in; Set-Cookie: auth_token (HttpOnly, Secure, SameSite=Strict)'),
          ...errors(400, 401, 429),
        },
      },
    },
    async (request, reply) => {
      const user = await accounts.verifyCredentials(request.body.username, request.body.password);
      if (!user) throw unauthorized('Invalid username or password');
      const issued = await auth.signIn(reply, user);
      reply.header('cache-control', 'no-store');
      return ok('Signed in', { user: { id: user.id, username: user.username, role: user.role, email: user.email }, expires_at: issued.expiresAt.toISOString() });
    },
  );
}

function logoutRoute(app: FastifyInstance, { auth, accounts }: AuthRouteDeps): void {
  app.post(
    '/auth/logout',
    {
      preHandler: auth.optionalUser,
      schema: { tags, summary: 'Sign out: revokes the session token and clears the cookie', response: { 200: envelope({ type: 'object', properties: {} }), ...errors(429) } },
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
        summary: 'Whether the caller is signed in, and as whom',
        response: {
          200: envelope({
            type: 'object',
            required: ['authenticated'],
            properties: { authenticated: { type: 'boolean' }, user: userSchema, expires_at: { type: 'string', format: 'date-time' } },
          }),
          ...errors(429),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const user = request.user;
      if (!user) return ok('Not signed in', { authenticated: false });
      return ok('Signed in', { authenticated: true, user: { id: user.id, username: user.username, role: user.role }, expires_at: user.expiresAt.toISOString() });
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
        methods: [{ type: 'basic', method: 'POST', path: '/auth/login/basic', fields: ['username', 'password'], cookie: 'auth_token' }, ...(deps.signIn ? [{ ...deps.signIn, cookie: 'auth_token' }] : [])],
      }),
  );
}
