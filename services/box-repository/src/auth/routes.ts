// Accounts, part 1: sign-in (a user's password, or a service account's username and key), sign-up, sign-out,
// and the current user. The session JWT travels in `x-access-token`.
import { checkPassword, forbidden, HttpError, unauthorized, unprocessable, UsernameTakenError } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { ServiceContext } from '../context.ts';
import { alreadyExists } from '../http/errors.ts';
import { body, email, errors, text } from '../http/schemas.ts';
import { messageSchema } from '../records.ts';
import { fromServiceAccountKey, principalOfSubject, requirePrincipal, type Principal } from './principal.ts';
import { claimInvitation } from './invitation-routes.ts';
import { recordEvent } from '../events/outbox.ts';
import { endFamily, refreshSession, renewAccessToken, startSession } from './sessions.ts';
import { looksLikeServiceAccountKey } from './service-account-keys.ts';

const USERNAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';

const organizationsSchema = {
  type: 'array',
  items: { type: 'object', properties: { name: { type: 'string' }, role: { type: 'string' } }, required: ['name', 'role'], additionalProperties: false },
} as const;

const userSchema = {
  type: 'object',
  properties: {
    id: { type: ['string', 'integer'] },
    username: { type: 'string' },
    email: { type: ['string', 'null'] },
    roles: { type: 'array', items: { type: 'string' } },
    organization: { type: ['string', 'null'], description: 'The first organization (by name) the caller belongs to.' },
    organizations: organizationsSchema,
    created_at: { type: ['string', 'null'], format: 'date-time' },
  },
  required: ['id', 'username', 'email', 'roles', 'organization', 'organizations'],
  additionalProperties: false,
} as const;

const tokenProperties = {
  access_token: { type: 'string', description: 'The session token: send it as `x-access-token`.' },
  expires_at: { type: 'string', format: 'date-time' },
  refresh_token: { type: 'string', description: 'Exchange it at POST /api/auth/refreshtoken (once: each use returns the next one).' },
  refresh_token_expires_at: { type: 'string', format: 'date-time' },
} as const;

const signInSchema = {
  ...userSchema,
  properties: { ...userSchema.properties, ...tokenProperties },
  required: [...userSchema.required, 'access_token', 'expires_at', 'refresh_token', 'refresh_token_expires_at'],
} as const;

const refreshedSchema = {
  type: 'object',
  properties: tokenProperties,
  required: ['access_token', 'expires_at', 'refresh_token', 'refresh_token_expires_at'],
  additionalProperties: false,
} as const;
const renewedSchema = {
  type: 'object',
  properties: { access_token: tokenProperties.access_token, expires_at: tokenProperties.expires_at },
  required: ['access_token', 'expires_at'],
  additionalProperties: false,
} as const;

const membershipRow = z.object({ name: z.string(), role: z.string() });

export async function describePrincipal(ctx: ServiceContext, principal: Principal) {
  if (principal.kind === 'service_account') {
    const name = await ctx.pool.oneFirst(sql.type(z.object({ name: z.string() }))`select name from organizations where id = ${principal.organizationId}`);
    return {
      id: principal.id,
      username: principal.username,
      email: null,
      roles: ['service_account'],
      organization: name,
      organizations: [{ name, role: principal.role }],
      created_at: null,
    };
  }
  const organizations = await ctx.pool.any(sql.type(membershipRow)`
    select o.name, m.role from memberships m join organizations o on o.id = m.organization_id
    where m.user_id = ${principal.id}::uuid order by lower(o.name)`);
  return {
    id: principal.id,
    username: principal.username,
    email: principal.email,
    roles: principal.isAdmin ? ['user', 'admin'] : ['user'],
    organization: organizations[0]?.name ?? null,
    organizations: [...organizations],
    created_at: principal.createdAt.toISOString(),
  };
}

/** A user's password, or a service account's username and key; null when they don't match. */
export async function verifySignIn(ctx: ServiceContext, username: string, password: string): Promise<Principal | null> {
  if (looksLikeServiceAccountKey(password)) {
    // A wrong key is a failed sign-in; a database failure stays one (503), not a wrong password.
    const account = await fromServiceAccountKey(ctx, password).catch((error: unknown) => {
      if (error instanceof HttpError && error.statusCode === 401) return null;
      throw error;
    });
    return account && account.username.toLowerCase() === username.toLowerCase() ? account : null;
  }
  const user = await ctx.accounts.verifyCredentials(username, password);
  if (!user) return null;
  return { kind: 'user', id: user.id, username: user.username, email: user.email, isAdmin: user.role === 'admin', createdAt: user.created_at };
}

/** A new session (its access token and its first refresh token) for a verified principal. */
export function issueSession(ctx: ServiceContext, principal: Principal, stay: boolean) {
  return startSession(ctx, principal.kind === 'user' ? principal.id : `sa:${principal.id}`, stay);
}

export const USERNAME_REGEX = new RegExp(USERNAME_PATTERN);

/**
 * Creates an account (role user); with an invitation token, also its membership. The account, the membership and
 * `user.created` commit together or not at all. Throws the API's 409/422 errors (the console shows them too).
 */
export async function signUp(
  ctx: ServiceContext,
  input: { username: string; email: string; password: string; invitationToken?: string },
): Promise<{ joined?: string }> {
  const { username, email: address, password, invitationToken: invitation } = input;
  // Checked first: where sign-up is closed, a caller learns nothing else (not even whether a name is taken).
  const mode = ctx.config.auth.sign_up;
  if (mode === 'off') throw forbidden('Sign-up is off on this server (auth.sign_up: off): accounts come from its identity provider or its administrators');
  if (mode === 'invited' && invitation === undefined) {
    throw forbidden(
      'Sign-up needs an invitation on this server (auth.sign_up: invited): ask a moderator or admin of an organization to invite your e-mail address',
    );
  }
  const failures = checkPassword(password);
  if (failures.length > 0) {
    throw unprocessable(
      'The password does not meet the password rules',
      failures.map((f) => ({ pointer: '/password', rule: f.rule, params: {}, detail: f.detail })),
    );
  }
  if (username.toLowerCase().startsWith('sa-')) {
    throw unprocessable('Reserved username', [
      { pointer: '/username', rule: 'reserved', params: { prefix: 'sa-' }, detail: 'names starting with "sa-" are reserved for service accounts' },
    ]);
  }
  let joined: string | undefined;
  try {
    await ctx.pool.transaction(async (tx) => {
      const claimed = invitation !== undefined ? await claimInvitation(tx, invitation, address) : undefined;
      const user = await ctx.accounts.create({ username, email: address, password, role: 'user' }, tx);
      await claimed?.accept(user.id);
      joined = claimed?.organization;
      await recordEvent(tx, { type: 'user.created', data: { username: user.username } });
    });
  } catch (error) {
    if (error instanceof UsernameTakenError) {
      const byName = await ctx.accounts.findByUsername(username);
      throw byName
        ? alreadyExists(`The username '${username}' is taken`, '/username', username)
        : alreadyExists('An account with this e-mail address exists', '/email', address);
    }
    throw error;
  }
  return joined ? { joined } : {};
}

export async function authRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  app.post<{ Body: { username: string; password: string; stay_logged_in?: boolean } }>(
    '/api/auth/signin',
    {
      schema: {
        tags: ['auth'],
        summary: "Sign in with a username and password (or a service account's username and key); returns the session token",
        body: body({ username: text(254), password: text(1024), stay_logged_in: { type: 'boolean' } }, ['username', 'password']),
        response: { 200: signInSchema, ...errors(401, 422, 429) },
      },
    },
    async (request) => {
      const { username, password, stay_logged_in: stay = false } = request.body;
      const principal = await verifySignIn(ctx, username, password);
      if (!principal) throw unauthorized('Invalid username or password');
      return { ...(await describePrincipal(ctx, principal)), ...(await issueSession(ctx, principal, stay)) };
    },
  );

  app.get(
    '/api/auth/refresh-token',
    {
      schema: {
        tags: ['auth'],
        summary: 'Refresh variant A: a new session token for the one in x-access-token (sessions signed in with stayLoggedIn only); the old one stops working',
        response: { 200: renewedSchema, ...errors(401, 403) },
      },
    },
    async (request) => {
      const principal = await requirePrincipal(ctx, request);
      if (!principal.session) throw forbidden('Only a session token (x-access-token) can be refreshed');
      if (!principal.session.stayLoggedIn)
        throw forbidden('This session was not signed in with stayLoggedIn: sign in again, or use POST /api/auth/refreshtoken with its refresh token');
      return renewAccessToken(ctx.pool, ctx, principal.session, principal.kind === 'user' ? principal.id : `sa:${principal.id}`);
    },
  );

  app.post<{ Body: { refresh_token: string } }>(
    '/api/auth/refreshtoken',
    {
      schema: {
        tags: ['auth'],
        summary:
          'Refresh variant B: a refresh token for a new session token and the next refresh token (each refresh token works once; reusing one ends the session)',
        body: body({ refresh_token: text(4096) }, ['refresh_token']),
        response: { 200: refreshedSchema, ...errors(401, 429) },
      },
    },
    async (request) =>
      refreshSession(ctx, request.body.refresh_token, async (subject) => {
        await principalOfSubject(ctx, subject);
      }),
  );

  app.post<{ Body: { username: string; email: string; password: string; invitation_token?: string } }>(
    '/api/auth/signup',
    {
      schema: {
        tags: ['auth'],
        summary:
          'Create an account (role user; with an invitation token, a member of the inviting organization). auth.sign_up decides who may: open (anyone), invited (the default: only with an invitation token) or off (403)',
        body: body(
          {
            username: { type: 'string', pattern: USERNAME_PATTERN },
            email,
            password: text(1024),
            invitation_token: {
              type: 'string',
              maxLength: 128,
              description: 'From an invitation (POST /api/auth/invite): the new account joins its organization. The e-mail address must be the invited one.',
            },
          },
          ['username', 'email', 'password'],
        ),
        response: { 201: messageSchema, ...errors(403, 409, 422, 429) },
      },
    },
    async (request, reply) => {
      const { username, invitation_token: invitation } = request.body;
      const { joined } = await signUp(ctx, { username, email: request.body.email, password: request.body.password, invitationToken: invitation });
      return reply.status(201).send({ message: `User '${username}' registered${joined ? ` and joined '${joined}'` : ''}; sign in at /api/auth/signin` });
    },
  );

  app.post(
    '/api/auth/signout',
    {
      schema: {
        tags: ['auth'],
        summary: 'End the current session on every replica: its token, the tokens refreshed from it and its refresh tokens are refused from now on',
        response: { 200: messageSchema, ...errors(401) },
      },
    },
    async (request) => {
      const principal = await requirePrincipal(ctx, request);
      if (!principal.session) throw forbidden('Only a session token (x-access-token) can be signed out; delete a service-account key instead');
      const { jti, expiresAt, family } = principal.session;
      await ctx.pool.transaction(async (tx) => {
        await tx.query(
          sql.unsafe`insert into revoked_sessions (jti, expires_at) values (${jti}, ${expiresAt.toISOString()}::timestamptz) on conflict (jti) do nothing`,
        );
        if (family) await endFamily(tx, family);
      });
      return { message: 'Signed out' };
    },
  );

  for (const url of ['/api/user', '/api/user/profile']) {
    app.get(
      url,
      {
        schema: { tags: ['auth'], summary: 'The signed-in user (or service account): roles and organizations', response: { 200: userSchema, ...errors(401) } },
      },
      async (request) => describePrincipal(ctx, await requirePrincipal(ctx, request)),
    );
  }
}
