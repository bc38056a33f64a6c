// Password accounts shared by the services: users with a role, argon2id hashes, the first admin, revoked
// sessions (sign-out) and disabled accounts, all in the service's own PostgreSQL schema. A disabled account is
// invisible to sign-in and to credential checks (findById, verifyCredentials); admins still see it in list().
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { UniqueIntegrityConstraintViolationError, sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { MigrationSource } from '../db/migrate.ts';
import { hashPassword, verifyPassword } from '../auth/passwords.ts';
import { createVerifiedCredentials } from './verified-credentials.ts';
import { ignoreError } from '../errors/ignore-error.ts';

export const accountMigrations: MigrationSource = {
  namespace: 'kit-accounts',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export const userRow = z.object({
  id: z.string(),
  username: z.string(),
  email: z.string().nullable(),
  role: z.string(),
  disabled: z.boolean(),
  created_at: z.number().transform((ms) => new Date(ms)),
});
export type User = z.output<typeof userRow>;

const userColumns = sql.fragment`id, username, email, role, disabled_at is not null as disabled, created_at`;

export class UsernameTakenError extends Error {
  override name = 'UsernameTakenError';
}

// Verifying against this when the user doesn't exist keeps the response time of a wrong username and a wrong
// password the same, so usernames can't be probed by timing.
let dummyHash: Promise<string> | undefined;

export function createAccounts(pool: DatabasePool) {
  const verified = createVerifiedCredentials();
  const findByUsername = (username: string) => pool.maybeOne(sql.type(userRow)`select ${userColumns} from users where lower(username) = lower(${username})`);

  return {
    findByUsername,

    /** Every account, by username (case-insensitive). */
    list: () => pool.any(sql.type(userRow)`select ${userColumns} from users order by lower(username), username`),

    /** The account if it exists and is not disabled: what every credential check asks. */
    findById: (id: string) => pool.maybeOne(sql.type(userRow)`select ${userColumns} from users where id = ${id}::uuid and disabled_at is null`),

    /** The account whatever its state (administration). */
    findAnyById: (id: string) => pool.maybeOne(sql.type(userRow)`select ${userColumns} from users where id = ${id}::uuid`),

    /** Changes the role and/or disables or re-enables an account; null when it doesn't exist. */
    update: (id: string, change: { role?: string | undefined; disabled?: boolean | undefined }) => updateUser(pool, id, change),

    /** Deletes an account (rows that reference it go with it); false when it didn't exist. */
    remove: async (id: string) => (await pool.query(sql.unsafe`delete from users where id = ${id}::uuid`)).rowCount === 1,

    /** Creates an account; `connection` lets a caller do it inside its own transaction (with what goes with it). */
    create: (input: NewUser, connection: CommonQueryMethods = pool): Promise<User> => createUser(connection, input),

    /**
     * The user for these credentials, or undefined; the same work is done whether or not the user exists.
     * `cached` (for credentials sent with every request, HTTP Basic): a success is remembered for a minute and
     * answered without argon2 while the stored hash is unchanged. Failures are never cached.
     */
    verifyCredentials: (username: string, password: string, options: { cached?: boolean } = {}): Promise<User | undefined> =>
      verifyCredentials(pool, verified, { username, password, cached: options.cached ?? false }),

    async setPassword(userId: string, password: string): Promise<void> {
      const hash = await hashPassword(password);
      await pool.query(sql.unsafe`update users set password_hash = ${hash}, updated_at = now() where id = ${userId}::uuid`);
    },

    /**
     * Creates the first admin when no admin exists yet. The password comes from the caller (e.g.
     * BOXYARD_ADMIN_PASSWORD) or is generated and returned so it can be printed once.
     */
    ensureAdmin: (input: { username: string; password?: string | undefined; role?: string }): Promise<{ created: boolean; password?: string }> =>
      ensureAdmin(pool, input),

    revokeSession: (jti: string, expiresAt: Date): Promise<void> => revokeSession(pool, jti, expiresAt),

    isSessionRevoked: (jti: string) => pool.exists(sql.unsafe`select 1 from revoked_sessions where jti = ${jti}`),

    /** Which of these session ids are revoked (one query for a whole re-check round). */
    revokedAmong: (jtis: readonly string[]): Promise<Set<string>> => revokedAmong(pool, jtis),

    /** The active (existing, not disabled) accounts among these ids. */
    activeAmong: (ids: readonly string[]): Promise<Map<string, User>> => activeAmong(pool, ids),
  };
}

export type Accounts = ReturnType<typeof createAccounts>;

interface NewUser {
  username: string;
  password: string;
  role: string;
  email?: string | null;
}

function updateUser(pool: DatabasePool, id: string, change: { role?: string | undefined; disabled?: boolean | undefined }) {
  return pool.maybeOne(sql.type(userRow)`
    update users set
      role = coalesce(${change.role ?? null}::text, role),
      disabled_at = case when ${change.disabled ?? null}::boolean is null then disabled_at
                         when ${change.disabled ?? null}::boolean then coalesce(disabled_at, now()) else null end,
      updated_at = now()
    where id = ${id}::uuid
    returning ${userColumns}`);
}

async function createUser(connection: CommonQueryMethods, input: NewUser): Promise<User> {
  const hash = await hashPassword(input.password);
  try {
    return await connection.one(sql.type(userRow)`
      insert into users (username, email, password_hash, role)
      values (${input.username}, ${input.email ?? null}, ${hash}, ${input.role})
      returning ${userColumns}`);
  } catch (error) {
    if (error instanceof UniqueIntegrityConstraintViolationError) throw new UsernameTakenError('username or email already taken');
    throw error;
  }
}

async function verifyCredentials(
  pool: DatabasePool,
  verified: ReturnType<typeof createVerifiedCredentials>,
  { username, password, cached }: { username: string; password: string; cached: boolean },
): Promise<User | undefined> {
  const row = await pool.maybeOne(sql.type(userRow.extend({ password_hash: z.string() }))`
    select ${userColumns}, password_hash from users where lower(username) = lower(${username}) and disabled_at is null`);
  if (!row) {
    await verifyPassword(await (dummyHash ??= hashPassword(randomBytes(16).toString('hex'))), password);
    return undefined;
  }
  const { password_hash: passwordHash, ...user } = row;
  const known = { id: user.id, passwordHash };
  if (cached && verified.has(username, password, known)) return user;
  if (!(await verifyPassword(passwordHash, password))) return undefined;
  if (cached) verified.remember(username, password, known);
  return user;
}

async function ensureAdmin(
  pool: DatabasePool,
  input: { username: string; password?: string | undefined; role?: string },
): Promise<{ created: boolean; password?: string }> {
  const role = input.role ?? 'admin';
  const exists = await pool.exists(sql.unsafe`select 1 from users where role = ${role}`);
  if (exists) return { created: false };
  const password = input.password ?? generatePassword();
  try {
    await createUser(pool, { username: input.username, password, role });
  } catch (error) {
    // Another replica created it at the same moment.
    if (error instanceof UsernameTakenError) return { created: false };
    throw error;
  }
  return input.password ? { created: true } : { created: true, password };
}

async function revokeSession(pool: DatabasePool, jti: string, expiresAt: Date): Promise<void> {
  await pool.query(sql.unsafe`
    insert into revoked_sessions (jti, expires_at) values (${jti}, ${expiresAt.toISOString()}::timestamptz)
    on conflict (jti) do nothing`);
  if (Math.random() < 0.05)
    void pool
      .query(sql.unsafe`delete from revoked_sessions where expires_at < now()`)
      .catch(ignoreError('opportunistic purge of expired revocations; the next one retries'));
}

async function revokedAmong(pool: DatabasePool, jtis: readonly string[]): Promise<Set<string>> {
  if (jtis.length === 0) return new Set();
  const rows = await pool.anyFirst(sql.type(z.object({ jti: z.string() }))`select jti from revoked_sessions where jti = any(${sql.array([...jtis], 'text')})`);
  return new Set(rows);
}

async function activeAmong(pool: DatabasePool, ids: readonly string[]): Promise<Map<string, User>> {
  if (ids.length === 0) return new Map();
  const rows = await pool.any(sql.type(userRow)`select ${userColumns} from users where id = any(${sql.array([...ids], 'uuid')}) and disabled_at is null`);
  return new Map(rows.map((row) => [row.id, row]));
}

/** A generated password that meets the password policy (upper, lower, digit) with ~144 bits of entropy. */
export function generatePassword(): string {
  return `${randomBytes(18).toString('base64url')}Aa1`;
}
