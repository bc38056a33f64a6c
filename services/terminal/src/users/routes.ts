// Accounts are managed by admins: POST /api/users creates one, GET /api/users lists them, PATCH
// /api/users/{id} changes its role or disables / re-enables it, DELETE /api/users/{id} deletes it. Disabling or
// deleting ends the account's live sessions; its attached sockets close at once on every replica (4403, through
// the account watch), and so do a demoted user's where the backend gives terminals to admins only.
import { badRequest, checkPassword, conflict, notFound, UsernameTakenError, type Accounts } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import type { Auth } from '../auth/plugin.ts';
import { envelope, errors, ok, userSchema } from '../http/envelope.ts';
import type { SessionService } from '../sessions/service.ts';

interface UpdateUserBody {
  role?: 'admin' | 'user';
  disabled?: boolean;
}

const listed = { ...userSchema, properties: { ...userSchema.properties, disabled: { type: 'boolean' }, created_at: { type: 'string', format: 'date-time' } } };
const present = (user: { id: string; username: string; role: string; email: string | null; disabled: boolean; created_at: Date }) => ({
  id: user.id,
  username: user.username,
  role: user.role,
  email: user.email,
  disabled: user.disabled,
  created_at: user.created_at.toISOString(),
});

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } };

interface CreateUserBody {
  username: string;
  password: string;
  role?: 'admin' | 'user';
  email?: string;
}

export function userRoutes(app: FastifyInstance, deps: { auth: Auth; accounts: Accounts; sessions: SessionService }): void {
  const tags = ['users'];

  app.post<{ Body: CreateUserBody }>(
    '/api/users',
    {
      preHandler: deps.auth.requireAdmin,
      schema: {
        tags,
        summary: 'Create an account (admins only)',
        body: {
          type: 'object',
          required: ['username', 'password'],
          additionalProperties: false,
          properties: {
            username: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' },
            password: { type: 'string', minLength: 1, maxLength: 1024 },
            role: { type: 'string', enum: ['admin', 'user'], default: 'user' },
            email: { type: 'string', format: 'email', maxLength: 254 },
          },
        },
        response: { 200: envelope({ type: 'object', properties: { user: listed } }), ...errors(400, 401, 403, 409, 429) },
      },
    },
    async (request) => {
      const failures = checkPassword(request.body.password);
      if (failures.length > 0) {
        throw badRequest(
          'Password does not meet the policy',
          failures.map((f) => ({ pointer: '/password', rule: f.rule, params: {}, detail: f.detail })),
        );
      }
      try {
        const user = await deps.accounts.create({
          username: request.body.username,
          password: request.body.password,
          role: request.body.role ?? 'user',
          email: request.body.email ?? null,
        });
        return ok('User created', { user: present(user) });
      } catch (error) {
        if (error instanceof UsernameTakenError) throw conflict('Username or email already taken');
        throw error;
      }
    },
  );

  app.get(
    '/api/users',
    {
      preHandler: deps.auth.requireAdmin,
      schema: {
        tags,
        summary: 'List accounts (admins only)',
        response: { 200: envelope({ type: 'object', properties: { users: { type: 'array', items: listed } } }), ...errors(401, 403, 429) },
      },
    },
    async () => {
      const users = await deps.accounts.list();
      return ok('Users', { users: users.map(present) });
    },
  );
}

export function userAdministrationRoutes(app: FastifyInstance, deps: { auth: Auth; accounts: Accounts; sessions: SessionService }): void {
  const tags = ['users'];
  const notYourself = (callerId: string, id: string, what: string) => {
    // An admin locking themselves out (and maybe the last admin) is never what was meant.
    if (callerId === id) throw badRequest(`You cannot ${what} your own account`);
  };

  app.patch<{ Params: { id: string }; Body: UpdateUserBody }>(
    '/api/users/:id',
    {
      preHandler: deps.auth.requireAdmin,
      schema: {
        tags,
        summary: "Change an account's role, or disable / re-enable it (admins only; not your own)",
        description: 'Disabling ends the live sessions of the account and closes its sockets (4403); its sign-ins and tokens stop working at once.',
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { role: { type: 'string', enum: ['admin', 'user'] }, disabled: { type: 'boolean' } },
        },
        response: { 200: envelope({ type: 'object', properties: { user: listed } }), ...errors(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      notYourself(request.user!.id, request.params.id, 'change');
      const user = await deps.accounts.update(request.params.id, request.body);
      if (!user) throw notFound('User does not exist');
      if (user.disabled) await deps.sessions.stopAllOf(user.id);
      return ok(user.disabled ? 'User updated; disabled, its sessions ended' : 'User updated', { user: present(user) });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/users/:id',
    {
      preHandler: deps.auth.requireAdmin,
      schema: {
        tags,
        summary: 'Delete an account and its sessions (admins only; not your own)',
        params: idParams,
        response: { 200: envelope({ type: 'object', properties: {} }), ...errors(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      notYourself(request.user!.id, request.params.id, 'delete');
      if (!(await deps.accounts.findAnyById(request.params.id))) throw notFound('User does not exist');
      // Shells first: deleting the row takes the session records along, which would leave their agents behind.
      await deps.sessions.stopAllOf(request.params.id);
      if (!(await deps.accounts.remove(request.params.id))) throw notFound('User does not exist');
      return ok('User deleted', {});
    },
  );
}
