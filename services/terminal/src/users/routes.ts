// Accounts are managed by admins: POST /api/users creates one, GET /api/users lists them.
import { badRequest, checkPassword, conflict, UsernameTakenError, type Accounts } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import type { Auth } from '../auth/plugin.ts';
import { envelope, errors, ok, userSchema } from '../http/envelope.ts';

interface CreateUserBody {
  username: string;
  password: string;
  role?: 'admin' | 'user';
  email?: string;
}

export function userRoutes(app: FastifyInstance, deps: { auth: Auth; accounts: Accounts }): void {
  const tags = ['users'];
  const present = (user: { id: string; username: string; role: string; email: string | null; created_at: Date }) => ({
    id: user.id,
    username: user.username,
    role: user.role,
    email: user.email,
    created_at: user.created_at.toISOString(),
  });
  const listed = { ...userSchema, properties: { ...userSchema.properties, created_at: { type: 'string', format: 'date-time' } } };

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
        throw badRequest('Password does not meet the policy', failures.map((f) => ({ pointer: '/password', rule: f.rule, params: {}, detail: f.detail })));
      }
      try {
        const user = await deps.accounts.create({ username: request.body.username, password: request.body.password, role: request.body.role ?? 'user', email: request.body.email ?? null });
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
      schema: { tags, summary: 'List accounts (admins only)', response: { 200: envelope({ type: 'object', properties: { users: { type: 'array', items: listed } } }), ...errors(401, 403, 429) } },
    },
    async () => {
      const users = await deps.accounts.list();
      return ok('Users', { users: users.map(present) });
    },
  );
}
