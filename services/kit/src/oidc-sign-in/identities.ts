// Provider identities → local users: the user is created on first sign-in and found again by (issuer, subject)
// afterwards — never by username or email, which a provider may hand to anyone. The role follows the
// provider's groups on every sign-in (admin when in one of `admin_groups`), so removing someone from the group
// at the provider takes their admin rights away at their next sign-in.
import { createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sql, type DatabasePool } from 'slonik';
import { userRow, type User } from '../accounts/accounts.ts';
import { hashPassword } from '../auth/passwords.ts';
import type { MigrationSource } from '../db/migrate.ts';
import { trimTrailing } from '../text/trim.ts';
import { ignoreError } from '../errors/ignore-error.ts';

/** After kit-accounts: the tables reference `users`. */
export const oidcSignInMigrations: MigrationSource = {
  namespace: 'kit-oidc-sign-in',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export interface ProviderIdentity {
  issuer: string;
  subject: string;
  /** The preferred username (already taken from the configured claim; `sub` when the claim is absent). */
  username: string;
  email: string | undefined;
  groups: string[];
}

export interface RoleMapping {
  admin: string;
  user: string;
  adminGroups: readonly string[];
}

const userColumns = sql.fragment`u.id, u.username, u.email, u.role, u.disabled_at is not null as disabled, u.created_at`;
const MAX_USERNAME = 64;

/**
 * A username every service accepts (letters, digits, `.`, `_`, `@`, `-`; starting with a letter or digit;
 * at most 64 characters): accents dropped, other characters turned into `-`; `user` when nothing is left.
 */
export function usernameFrom(value: string): string {
  const ascii = value.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  const cleaned = ascii.replace(/[^A-Za-z0-9._@-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return trimTrailing(cleaned, '._@-').slice(0, 48) || 'user';
}

/** The names tried in order: the provider's, then with a suffix stable for this identity, then random ones. */
function candidateUsernames(identity: ProviderIdentity): string[] {
  const base = usernameFrom(identity.username);
  const stable = createHash('sha256').update(`${identity.issuer}\n${identity.subject}`).digest('hex').slice(0, 6);
  const random = () => randomBytes(3).toString('hex');
  return [base, `${base}-${stable}`, `${base}-${stable}-${random()}`, `${base}-${random()}${random()}`].map((name) => name.slice(0, MAX_USERNAME));
}

/** The identity's local user was deleted: it stays deleted instead of being created again on the next sign-in. */
export class DeletedIdentityError extends Error {
  override name = 'DeletedIdentityError';
  constructor() {
    super('This account was deleted by an administrator');
  }
}

export function roleFor(groups: readonly string[], mapping: RoleMapping): string {
  return mapping.adminGroups.some((group) => groups.includes(group)) ? mapping.admin : mapping.user;
}

export function createIdentityLinks(pool: DatabasePool) {
  return {
    /**
     * The user for this provider identity, created on first sight; its role and email refreshed from the claims.
     * A disabled user is returned as such (the caller refuses it); a deleted one throws DeletedIdentityError.
     */
    async signIn(identity: ProviderIdentity, mapping: RoleMapping): Promise<User> {
      const role = roleFor(identity.groups, mapping);
      return pool.transaction(async (tx) => {
        // Two first sign-ins of the same identity at once (two tabs, two replicas) must make one user.
        await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext(${`oidc:${identity.issuer}\n${identity.subject}`}))`);
        const linked = await tx.maybeOne(sql.type(userRow)`
          select ${userColumns} from oidc_identities i join users u on u.id = i.user_id
          where i.issuer = ${identity.issuer} and i.subject = ${identity.subject}`);
        if (linked) {
          await tx.query(sql.unsafe`update oidc_identities set last_sign_in_at = now() where issuer = ${identity.issuer} and subject = ${identity.subject}`);
          const email = identity.email ?? null;
          // The email follows the provider unless another account holds it (emails are unique).
          return tx.one(sql.type(userRow)`
            update users u set role = ${role}, updated_at = now(),
              email = case when ${email}::text is null or exists (select 1 from users o where lower(o.email) = lower(${email}::text) and o.id <> u.id) then u.email else ${email}::text end
            where u.id = ${linked.id}::uuid
            returning ${userColumns}`);
        }
        if (await tx.exists(sql.unsafe`select 1 from oidc_deleted_identities where issuer = ${identity.issuer} and subject = ${identity.subject}`)) {
          throw new DeletedIdentityError();
        }
        // Only a new user needs it (argon2 takes a while; provider tokens reach here on every cache miss): an
        // unknown random password, so the account can't be signed into with a password.
        const unusableHash = await hashPassword(randomBytes(32).toString('base64url'));
        const emailTaken = identity.email ? await tx.exists(sql.unsafe`select 1 from users where lower(email) = lower(${identity.email})`) : false;
        const email = emailTaken ? null : (identity.email ?? null);
        for (const username of candidateUsernames(identity)) {
          // `on conflict do nothing` covers both unique indexes (username, email) without aborting the transaction.
          const created = await tx.maybeOne(sql.type(userRow)`
            insert into users as u (username, email, password_hash, role) values (${username}, ${email}, ${unusableHash}, ${role})
            on conflict do nothing
            returning ${userColumns}`);
          if (!created) continue;
          await tx.query(
            sql.unsafe`insert into oidc_identities (issuer, subject, user_id) values (${identity.issuer}, ${identity.subject}, ${created.id}::uuid)`,
          );
          return created;
        }
        throw new Error('could not find a free username for a new provider identity');
      });
    },

    /** Remembers the ID token behind a session, for the id_token_hint at sign-out. */
    async rememberSession(jti: string, idToken: string, expiresAt: Date): Promise<void> {
      await pool.query(sql.unsafe`
        insert into oidc_sessions (session_jti, id_token, expires_at) values (${jti}, ${idToken}, ${expiresAt.toISOString()}::timestamptz)
        on conflict (session_jti) do nothing`);
      if (Math.random() < 0.05)
        void pool
          .query(sql.unsafe`delete from oidc_sessions where expires_at < now()`)
          .catch(ignoreError('opportunistic purge of expired sessions; the next one retries'));
    },

    /** The ID token behind a session (forgotten as it is read: the session is ending). */
    async takeSession(jti: string): Promise<string | undefined> {
      const row = await pool.maybeOne(sql.unsafe`delete from oidc_sessions where session_jti = ${jti} returning id_token`);
      return row ? String((row as { id_token: string }).id_token) : undefined;
    },

    /** True the first time a state is redeemed, false for a replay (any replica). */
    async redeemState(state: string, expiresAt: Date): Promise<boolean> {
      const hash = createHash('sha256').update(state).digest('base64url');
      const row = await pool.maybeOne(sql.unsafe`
        insert into oidc_used_states (state_hash, expires_at) values (${hash}, ${expiresAt.toISOString()}::timestamptz)
        on conflict (state_hash) do nothing returning state_hash`);
      if (Math.random() < 0.05)
        void pool
          .query(sql.unsafe`delete from oidc_used_states where expires_at < now()`)
          .catch(ignoreError('opportunistic purge of used states; the next one retries'));
      return row !== null;
    },
  };
}

export type IdentityLinks = ReturnType<typeof createIdentityLinks>;
