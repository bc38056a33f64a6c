// Session tokens and their refresh. A sign-in starts a session family: an access token (the session JWT) and,
// for variant B, a refresh token (a JWT of its own `typ`, tracked in `refresh_tokens`). Each refresh uses its
// token up and issues the next; a used token presented again means it was copied, so the whole family ends and
// so do its access tokens (revoked_sessions, which every replica checks). Variant A refreshes the access token
// itself, for sessions signed in with stayLoggedIn only. Sign-out ends the family too.
import { randomUUID } from 'node:crypto';
import { type DatabasePool, ignoreError, InvalidTokenError } from '@boxyard/kit';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { ServiceContext } from '../context.ts';
import { invalidCredentials } from './principal.ts';

export const REFRESH_TYP = 'boxyard-box-refresh+jwt';

export interface IssuedSession {
  access_token: string;
  expires_at: string;
  refresh_token: string;
  refresh_token_expires_at: string;
}

/** Lifetime of an access token: a stay-logged-in session's (variant A refreshes it), else `auth.jwt.expiresIn`. */
export const accessTtl = (ctx: ServiceContext, stay: boolean): number =>
  stay ? ctx.config.auth.jwt.stayLoggedInExpiresIn : (ctx.config.auth.jwt.expiresIn ?? ctx.config.session.ttl_seconds);

const familyTtl = (ctx: ServiceContext, stay: boolean): number => (stay ? ctx.config.auth.jwt.stayLoggedInExpiresIn : ctx.config.auth.jwt.refreshExpiresIn);

async function issue(
  ctx: ServiceContext,
  connection: CommonQueryMethods,
  subject: string,
  stay: boolean,
  family: string,
  familyExpiresAt: Date,
): Promise<IssuedSession> {
  const secondsLeft = Math.max(1, Math.floor((familyExpiresAt.getTime() - Date.now()) / 1000));
  const access = await ctx.tokens.sign(subject, { stay, sid: family }, Math.min(accessTtl(ctx, stay), secondsLeft));
  const refresh = await ctx.refreshTokens.sign(subject, { stay, sid: family }, secondsLeft);
  await connection.query(sql.unsafe`
    insert into refresh_tokens (jti, family, subject, stay_logged_in, access_jti, access_expires_at, family_expires_at)
    values (${refresh.jti}, ${family}::uuid, ${subject}, ${stay}, ${access.jti}, ${access.expiresAt.toISOString()}::timestamptz, ${familyExpiresAt.toISOString()}::timestamptz)`);
  return {
    access_token: access.token,
    expires_at: access.expiresAt.toISOString(),
    refresh_token: refresh.token,
    refresh_token_expires_at: refresh.expiresAt.toISOString(),
  };
}

/** A new session family for a subject that just proved who it is. */
export function startSession(ctx: ServiceContext, subject: string, stay: boolean): Promise<IssuedSession> {
  if (Math.random() < 0.05)
    void ctx.pool
      .query(sql.unsafe`delete from refresh_tokens where family_expires_at < now()`)
      .catch(ignoreError('opportunistic purge of expired refresh tokens; the next one retries'));
  return issue(ctx, ctx.pool, subject, stay, randomUUID(), new Date(Date.now() + familyTtl(ctx, stay) * 1000));
}

/** Ends a family: its refresh tokens and every access token issued with them. */
export async function endFamily(connection: CommonQueryMethods, family: string): Promise<void> {
  await connection.query(sql.unsafe`update refresh_tokens set revoked_at = now() where family = ${family}::uuid and revoked_at is null`);
  await connection.query(sql.unsafe`
    insert into revoked_sessions (jti, expires_at)
    select access_jti, access_expires_at from refresh_tokens where family = ${family}::uuid and access_expires_at > now()
    on conflict (jti) do nothing`);
}

const refreshRow = z.object({
  family: z.string(),
  subject: z.string(),
  stay_logged_in: z.boolean(),
  family_expires_at: z.string(),
  used: z.boolean(),
  revoked: z.boolean(),
  expired: z.boolean(),
});

/** Variant B: a refresh token for the next access and refresh token. 401 for anything but an unused live token. */
export async function refreshSession(ctx: ServiceContext, token: string, stillAllowed: (subject: string) => Promise<void>): Promise<IssuedSession> {
  const claims = await ctx.refreshTokens.verify(token).catch((error: unknown) => {
    if (error instanceof InvalidTokenError) throw invalidCredentials(error.expired ? 'Refresh token expired' : 'Invalid refresh token');
    throw error;
  });
  // Checked first (outside the transaction, which may not use other connections): a disabled or deleted user, or
  // a service account whose creator lost the authority, gets no new token.
  await stillAllowed(claims.sub);
  const outcome = await ctx.pool.transaction(async (tx): Promise<{ refused: string } | { issued: IssuedSession }> => {
    const row = await tx.maybeOne(sql.type(refreshRow)`
      select family::text, subject, stay_logged_in, to_jsonb(family_expires_at) #>> '{}' as family_expires_at,
             used_at is not null as used, revoked_at is not null as revoked, family_expires_at <= now() as expired
      from refresh_tokens where jti = ${claims.jti} for update`);
    if (!row || row.subject !== claims.sub) return { refused: 'Invalid refresh token' };
    if (row.revoked) return { refused: 'This session has ended (signed out, or a refresh token was reused)' };
    if (row.used) {
      await endFamily(tx, row.family);
      return { refused: 'Refresh token reused: it was already exchanged, so the session has been ended for safety' };
    }
    if (row.expired) return { refused: 'Refresh token expired' };
    await tx.query(sql.unsafe`update refresh_tokens set used_at = now() where jti = ${claims.jti}`);
    return { issued: await issue(ctx, tx, row.subject, row.stay_logged_in, row.family, new Date(row.family_expires_at)) };
  });
  if ('issued' in outcome) return outcome.issued;
  throw invalidCredentials(outcome.refused);
}

/**
 * Variant A: a stay-logged-in session's access token for a new one; the old one stops working. Single use: the
 * old token's revocation is the claim, so of two renewals racing (any replicas) one inserts it and the other finds
 * it taken. The new token ends no later than the session its sign-in started (the family's end).
 */
export async function renewAccessToken(
  pool: DatabasePool,
  ctx: ServiceContext,
  session: { jti: string; expiresAt: Date; family: string | undefined },
  subject: string,
) {
  const outcome = await pool.transaction(async (tx): Promise<{ refused: string } | { renewed: { access_token: string; expires_at: string } }> => {
    const claimed = await tx.maybeOne(sql.unsafe`
      insert into revoked_sessions (jti, expires_at) values (${session.jti}, ${session.expiresAt.toISOString()}::timestamptz)
      on conflict (jti) do nothing returning jti`);
    if (!claimed) return { refused: 'This session token was already renewed or signed out: use the token its renewal returned' };
    // The sign-in's row holds the end; renewed rows carry the same end (min: rows renewed before this rule carried later ones).
    const end = session.family
      ? await tx.maybeOneFirst(sql.type(z.object({ end: z.string().nullable() }))`
          select to_jsonb(min(family_expires_at)) #>> '{}' as end from refresh_tokens where family = ${session.family}::uuid and family_expires_at > now()`)
      : null;
    if (!end || !session.family) return { refused: "This session has ended: its sign-in's lifetime (auth.jwt.stayLoggedInExpiresIn) is over; sign in again" };
    const familyExpiresAt = new Date(end);
    const secondsLeft = Math.max(1, Math.floor((familyExpiresAt.getTime() - Date.now()) / 1000));
    const access = await ctx.tokens.sign(subject, { stay: true, sid: session.family }, Math.min(accessTtl(ctx, true), secondsLeft));
    // Kept with the family, so that signing out (or a refresh-token reuse) ends the renewed token as well.
    await tx.query(sql.unsafe`
      insert into refresh_tokens (jti, family, subject, stay_logged_in, access_jti, access_expires_at, family_expires_at, used_at)
      values (${`renewed:${access.jti}`}, ${session.family}::uuid, ${subject}, true, ${access.jti}, ${access.expiresAt.toISOString()}::timestamptz, ${familyExpiresAt.toISOString()}::timestamptz, now())`);
    return { renewed: { access_token: access.token, expires_at: access.expiresAt.toISOString() } };
  });
  if ('renewed' in outcome) return outcome.renewed;
  throw invalidCredentials(outcome.refused);
}
