// A link's optional password: argon2id like the accounts' (kit auth/passwords.ts), presented as HTTP Basic with any
// user name (`curl -u x:PASS`, `wget --user x --password PASS`) or once in the browser's form, which then sets a
// signed HttpOnly cookie scoped to the link's paths. Wrong passwords are counted per link and per client address in
// the rate limiter's PostgreSQL counters (every replica sees the same counts); at the limit the link answers 429
// with Retry-After until the window passes, before any password is checked.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { clientKey, HttpError, verifyPassword } from '@boxyard/kit';
import type { createVerifiedCredentials } from '@boxyard/kit/accounts/verified-credentials.ts';
import { hit } from '@boxyard/kit/rate-limit/rate-limit.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { LinkWithCreator } from './share-store.ts';

export const LINK_REALM = 'Basic realm="boxyard share link", charset="UTF-8"';
/** How long the browser form's cookie lets a visitor in (never past the link's own expiry). */
const COOKIE_SECONDS = 12 * 3600;
const MAX_PASSWORD_CHARS = 1024;

export interface PasswordGate {
  pool: DatabasePool;
  /** HMAC key of the cookies (the session secret). */
  secret: string;
  namespace: string;
  failuresPerLink: number;
  failuresPerAddress: number;
  windowSeconds: number;
  /**
   * Passwords verified recently (the accounts' cache: a keyed hash, never the password): Basic sends the password
   * with every request, and `wget --mirror` makes one per file, each an argon2id check otherwise.
   */
  verified: ReturnType<typeof createVerifiedCredentials>;
}

export type PasswordOutcome = 'open' | 'accepted' | 'missing';

export const cookieName = (link: LinkWithCreator) => `share-${link.id}`;

/** The URL prefixes a link's cookie is sent to: its pages, its zips and its resumable uploads (`/-/tus/<token>` and below). */
export const cookiePaths = (link: LinkWithCreator) => [`/-/s/${link.token}/`, `/-/zip/${link.token}/`, `/-/tus/${link.token}`];

const fingerprint = (link: LinkWithCreator) =>
  createHash('sha256')
    .update(link.password_hash ?? '')
    .digest('base64url');
const mac = (gate: PasswordGate, link: LinkWithCreator, expires: number) =>
  createHmac('sha256', gate.secret)
    .update(`boxyard-share-link\n${link.id}\n${expires}\n${fingerprint(link)}`)
    .digest();

/** The cookie's value: its expiry and an HMAC binding it to this link and this password hash. */
export function signCookie(gate: PasswordGate, link: LinkWithCreator, now = Date.now()): { value: string; expires: Date } {
  const expires = Math.min(Math.floor(now / 1000) + COOKIE_SECONDS, Math.floor(link.expires_at / 1000));
  return { value: `${expires}.${mac(gate, link, expires).toString('base64url')}`, expires: new Date(expires * 1000) };
}

function cookieValid(gate: PasswordGate, link: LinkWithCreator, value: string | undefined): boolean {
  if (!value || value.length > 200) return false;
  const dot = value.indexOf('.');
  const expires = Number(value.slice(0, dot));
  if (dot < 1 || !Number.isSafeInteger(expires) || expires * 1000 <= Date.now()) return false;
  const given = Buffer.from(value.slice(dot + 1), 'base64url');
  const expected = mac(gate, link, expires);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The password a request presents with Basic (any user name), or undefined. */
export function basicPassword(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

const counterKeys = (gate: PasswordGate, link: LinkWithCreator, request: FastifyRequest) => ({
  link: `${gate.namespace}:share-password:link:${link.id}`,
  address: `${gate.namespace}:share-password:address:${clientKey(request.ip)}`,
});

/** 429 while this link or this address has used up its wrong guesses for the window. */
async function refuseWhileThrottled(gate: PasswordGate, keys: { link: string; address: string }): Promise<void> {
  const rows = await gate.pool.any(sql.type(z.object({ key: z.string(), hits: z.number(), ttl_ms: z.number() }))`
    select key, hits, greatest(0, ceil(extract(epoch from (resets_at - now())) * 1000))::float8 as ttl_ms
    from rate_limit_counters where key in (${keys.link}, ${keys.address}) and resets_at > now()`);
  const over = rows.filter((row) => row.hits >= (row.key === keys.link ? gate.failuresPerLink : gate.failuresPerAddress));
  if (over.length === 0) return;
  const retryAfter = Math.max(1, Math.ceil(Math.max(...over.map((row) => row.ttl_ms)) / 1000));
  throw new HttpError(429, `Too many wrong passwords for this link; retry in ${retryAfter} s`, { headers: { 'retry-after': String(retryAfter) } });
}

/**
 * Checks a password against the link's, throttled: true when it matches. A wrong one counts against the link and
 * the address. Used for Basic credentials and the browser form alike.
 */
export async function tryPassword(
  gate: PasswordGate,
  link: LinkWithCreator,
  request: FastifyRequest,
  password: string,
  onFailure: () => void,
): Promise<boolean> {
  const keys = counterKeys(gate, link, request);
  await refuseWhileThrottled(gate, keys);
  const stored = { id: link.id, passwordHash: link.password_hash! };
  if (gate.verified.has(link.id, password, stored)) return true;
  if (password.length <= MAX_PASSWORD_CHARS && (await verifyPassword(stored.passwordHash, password))) {
    gate.verified.remember(link.id, password, stored);
    return true;
  }
  onFailure();
  const windowMs = gate.windowSeconds * 1000;
  await Promise.all([hit(gate.pool, keys.link, windowMs), hit(gate.pool, keys.address, windowMs)]);
  return false;
}

/**
 * Whether the request may pass the link's password: `open` (no password), `accepted` (a valid cookie or the right
 * Basic password), `missing` (nothing presented). A wrong Basic password is a 401 (or 429 when throttled).
 */
export async function passwordGate(gate: PasswordGate, link: LinkWithCreator, request: FastifyRequest, onFailure: () => void): Promise<PasswordOutcome> {
  if (link.password_hash === null) return 'open';
  if (cookieValid(gate, link, request.cookies[cookieName(link)])) return 'accepted';
  const password = basicPassword(request);
  if (password === undefined) return 'missing';
  if (await tryPassword(gate, link, request, password, onFailure)) return 'accepted';
  throw new HttpError(401, 'Wrong password for this link', { headers: { 'www-authenticate': LINK_REALM } });
}

/** Sets the link's cookie on each of its paths (HttpOnly, SameSite=Lax so a shared URL opened from mail works). */
export function setLinkCookie(gate: PasswordGate, link: LinkWithCreator, reply: FastifyReply, secure: boolean): void {
  const { value, expires } = signCookie(gate, link);
  for (const path of cookiePaths(link)) reply.setCookie(cookieName(link), value, { path, httpOnly: true, secure, sameSite: 'lax', expires });
}
