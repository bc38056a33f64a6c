// Password accounts shared by the services: users with a role, argon2id hashes, the first admin, and revoked
// sessions (sign-out), all in the service's own PostgreSQL schema.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { UniqueIntegrityConstraintViolationError, sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { MigrationSource } from '../db/migrate.ts';
import { hashPassword, verifyPassword } from '../auth/passwords.ts';
import { createVerifiedCredentials } from './verified-credentials.ts';

export const accountMigrations: MigrationSource = {
  namespace: 'kit-accounts',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export const userRow = z.object({
  id: z.string(),
  username: z.string(),
  email: z.string().nullable(),
  role: z.string(),
  created_at: z.number().transform((ms) => new Date(ms)),
});
export type User = z.output<typeof userRow>;

const userColumns = sql.fragment`id, username, email, role, created_at`;

export class UsernameTakenError extends Error {
  override name = 'UsernameTakenError';
}

// Verifying against this when the user doesn't exist keeps the response time of a wrong username and a wrong
// password the same, so usernames can't be probed by timing.
let dummyHash: Promise<string> | undefined;

export function createAccounts(pool: DatabasePool) {
  const verified = createVerifiedCredentials();
  const findByUsername = (username: string) =>
    pool.maybeOne(sql.type(userRow)`select ${userColumns} from users where lower(username) = lower(${username})`);

  return {
    findByUsername,

    /** Every account, by username (case-insensitive). */
    list: () => pool.any(sql.type(userRow)`select ${userColumns} from users order by lower(username), username`),

    findById: (id: string) => pool.maybeOne(sql.type(userRow)`select ${userColumns} from users where id = ${id}::uuid`),

    async create(input: { username: string; password: string; role: string; email?: string | null }): Promise<User> {
      const hash = await hashPassword(input.password);
      try {
        return await pool.one(sql.type(userRow)`
          insert into users (username, email, password_hash, role)
          values (${input.username}, ${input.email ?? null}, ${hash}, ${input.role})
          returning ${userColumns}`);
      } catch (error) {
        if (error instanceof UniqueIntegrityConstraintViolationError) throw new UsernameTakenError('username or email already taken');
        throw error;
      }
    },

    /**
     * The user for these credentials, or undefined; the same work is done whether or not the user exists.
     * `cached` (for credentials sent with every request, HTTP Basic): a success is remembered for a minute and
     * answered without argon2 while the stored hash is unchanged. Failures are never cached.
     */
    async verifyCredentials(username: string, password: string, options: { cached?: boolean } = {}): Promise<User | undefined> {
      const row = await pool.maybeOne(sql.type(userRow.extend({ password_hash: z.string() }))`
        select ${userColumns}, password_hash from users where lower(username) = lower(${username})`);
      if (!row) {
        await verifyPassword(await (dummyHash ??= hashPassword(randomBytes(16).toString('hex'))), password);
        return undefined;
      }
      const { password_hash: passwordHash, ...user } = row;
      const known = { id: user.id, passwordHash };
      if (options.cached && verified.has(username, password, known)) return user;
      if (!(await verifyPassword(passwordHash, password))) return undefined;
      if (options.cached) verified.remember(username, password, known);
      return user;
    },

    async setPassword(userId: string, password: string): Promise<void> {
      const hash = await hashPassword(password);
      await pool.query(sql.unsafe`update users set password_hash = ${hash}, updated_at = now() where id = ${userId}::uuid`);
    },

    /**
     * Creates the first admin when no admin exists yet. The password comes from the caller (e.g.
     * BOXYARD_ADMIN_PASSWORD) or is generated and returned so it can be printed once.
     */
    async ensureAdmin(input: { username: string; password?: string | undefined; role?: string }): Promise<{ created: boolean; password?: string }> {
      const role = input.role ?? 'admin';
      const exists = await pool.exists(sql.unsafe`select 1 from users where role = ${role}`);
      if (exists) return { created: false };
      const password = input.password ?? generatePassword();
      try {
        await this.create({ username: input.username, password, role });
      } catch (error) {
        // Another replica created it at the same moment.
        if (error instanceof UsernameTakenError) return { created: false };
        throw error;
      }
      return input.password ? { created: true } : { created: true, password };
    },

    async revokeSession(jti: string, expiresAt: Date): Promise<void> {
      await pool.query(sql.unsafe`
        insert into revoked_sessions (jti, expires_at) values (${jti}, ${expiresAt.toISOString()}::timestamptz)
        on conflict (jti) do nothing`);
      if (Math.random() < 0.05) void pool.query(sql.unsafe`delete from revoked_sessions where expires_at < now()`).catch(() => {});
    },

    isSessionRevoked: (jti: string) => pool.exists(sql.unsafe`select 1 from revoked_sessions where jti = ${jti}`),
  };
}

export type Accounts = ReturnType<typeof createAccounts>;

/** A generated password that meets the password policy (upper, lower, digit) with ~144 bits of entropy. */
export function generatePassword(): string {
  return `${randomBytes(18).toString('base64url')}Aa1`;
}
