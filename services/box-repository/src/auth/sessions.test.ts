// Sessions across two replicas on one database: refresh (variants A and B), reuse detection, sign-out, lifetimes.
import { randomBytes } from 'node:crypto';
import { loadConfig } from '@boxyard/kit';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boxRepositoryConfigSchema } from '../config.ts';
import { startTestService, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

let one: TestService;
let two: TestService;

beforeAll(async () => {
  const secret = randomBytes(32).toString('base64url');
  one = await startTestService({ config: { session: { secret }, auth: { jwt: { expiresIn: '90m', refreshExpiresIn: '2h' } } } });
  two = await startTestService({
    databaseUrl: one.databaseUrl,
    localRoot: one.localRoot!,
    config: { session: { secret }, auth: { jwt: { expiresIn: '90m', refreshExpiresIn: '2h' } } },
  });
  await one.createUser('alice');
});
afterAll(async () => {
  await two?.close();
  await one?.close();
});

const signIn = async (service: TestService, stayLoggedIn = false) => {
  const response = await service.request('POST', '/api/auth/signin', { json: { username: 'alice', password: USER_PASSWORD, stayLoggedIn } });
  expect(response.status).toBe(200);
  return response.body as { access_token: string; refresh_token: string; expires_at: string; refresh_token_expires_at: string };
};
const whoAmI = (service: TestService, token: string) => service.request('GET', '/api/user', { token });
const refreshB = (service: TestService, refreshToken: string) => service.request('POST', '/api/auth/refreshtoken', { json: { refreshToken } });

describe('sessions on two replicas', () => {
  it('signing out on one replica ends the session on the other, its refresh token too', async () => {
    const session = await signIn(one);
    expect((await whoAmI(two, session.access_token)).status).toBe(200);
    expect((await one.request('POST', '/api/auth/signout', { token: session.access_token })).status).toBe(200);
    const refused = await whoAmI(two, session.access_token);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toContain('revoked');
    expect((await refreshB(two, session.refresh_token)).status).toBe(401);
  });

  it('variant B: each refresh token works once and returns the next; the tokens work on either replica', async () => {
    const first = await signIn(one);
    const second = await refreshB(two, first.refresh_token);
    expect(second.status).toBe(200);
    expect(second.body.access_token).not.toBe(first.access_token);
    expect((await whoAmI(one, second.body.access_token)).body.username).toBe('alice');
    const third = await refreshB(one, second.body.refresh_token);
    expect(third.status).toBe(200);
    // A refresh token never passes as a session token.
    expect((await whoAmI(one, third.body.refresh_token)).status).toBe(401);
    // The refreshed family keeps the end the sign-in gave it (refreshExpiresIn: 2h), however often it is refreshed.
    const end = (token: string) => decodeJwt(token).exp!;
    expect(end(third.body.refresh_token)).toBeLessThanOrEqual(end(first.refresh_token));
    expect(end(third.body.refresh_token)).toBeGreaterThanOrEqual(end(first.refresh_token) - 1);
  });

  it('variant B: reusing a refresh token ends the whole session, on every replica', async () => {
    const first = await signIn(one);
    const second = (await refreshB(one, first.refresh_token)).body;
    const third = (await refreshB(two, second.refresh_token)).body;
    expect((await whoAmI(one, third.access_token)).status).toBe(200);
    // An attacker replays the first (already used) refresh token.
    const replay = await refreshB(two, first.refresh_token);
    expect(replay.status).toBe(401);
    expect(replay.body.detail).toContain('reused');
    // Every token of the session is refused now, the legitimate client's newest ones included.
    for (const token of [first.access_token, second.access_token, third.access_token]) expect((await whoAmI(one, token)).status).toBe(401);
    expect((await refreshB(one, third.refresh_token)).status).toBe(401);
    // Other sessions of the same user are untouched.
    expect((await whoAmI(two, (await signIn(two)).access_token)).status).toBe(200);
  });

  it("variant B: a garbled, expired-family or disabled user's refresh token is refused with 401", async () => {
    expect((await refreshB(one, 'not-a-token')).status).toBe(401);
    const session = await signIn(one);
    // A session token is not a refresh token.
    expect((await refreshB(one, session.access_token)).status).toBe(401);
    await one.sql(`update refresh_tokens set family_expires_at = now() - interval '1 second' where jti = $1`, [decodeJwt(session.refresh_token).jti]);
    const expired = await refreshB(one, session.refresh_token);
    expect(expired.status).toBe(401);
    expect(expired.body.detail).toContain('expired');
    expect((await one.request('POST', '/api/auth/refreshtoken', { json: {} })).status).toBe(422);
  });

  it('variant A: only a stayLoggedIn session is refreshed; the old token stops on every replica', async () => {
    const short = await signIn(one);
    const refused = await two.request('GET', '/api/auth/refresh-token', { token: short.access_token });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('stayLoggedIn');
    expect((await one.request('GET', '/api/auth/refresh-token')).status).toBe(401);

    const long = await signIn(one, true);
    const renewed = await two.request('GET', '/api/auth/refresh-token', { token: long.access_token });
    expect(renewed.status).toBe(200);
    expect((await whoAmI(one, renewed.body.access_token)).status).toBe(200);
    expect((await whoAmI(one, long.access_token)).status).toBe(401);
    // Signing out the renewed token ends the session it came from (its refresh token too).
    expect((await one.request('POST', '/api/auth/signout', { token: renewed.body.access_token })).status).toBe(200);
    expect((await refreshB(two, long.refresh_token)).status).toBe(401);
  });

  it('variant A: renewing never extends a session past the end its sign-in gave it', async () => {
    const long = await signIn(one, true);
    const family = decodeJwt(long.access_token).sid as string;
    // As if the sign-in had been 30 days minus an hour ago: one hour of the session is left.
    await one.sql(`update refresh_tokens set family_expires_at = now() + interval '1 hour' where family = $1::uuid`, [family]);
    const renewed = await two.request('GET', '/api/auth/refresh-token', { token: long.access_token });
    expect(renewed.status).toBe(200);
    const end = (
      await one.sql<{ end: number }>(`select extract(epoch from min(family_expires_at))::float8 as end from refresh_tokens where family = $1::uuid`, [family])
    )[0]!.end;
    expect(decodeJwt(renewed.body.access_token).exp!).toBeLessThanOrEqual(Math.ceil(end));
    expect(Date.parse(renewed.body.expires_at) / 1000).toBeLessThanOrEqual(Math.ceil(end));
    // Once that end has passed, the token still in hand no longer renews.
    await one.sql(`update refresh_tokens set family_expires_at = now() - interval '1 second' where family = $1::uuid`, [family]);
    const late = await one.request('GET', '/api/auth/refresh-token', { token: renewed.body.access_token });
    expect(late.status).toBe(401);
    expect(late.body.detail).toContain('ended');
  });

  it('variant A: a token renews once, even when twelve renewals of it race on two replicas', async () => {
    const long = await signIn(one, true);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? two : one).request('GET', '/api/auth/refresh-token', { token: long.access_token })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, ...Array<number>(11).fill(401)]);
    for (const refused of answers.filter((a) => a.status === 401)) expect(refused.body).toMatchObject({ status: 401, detail: expect.any(String) });
    const winner = answers.find((a) => a.status === 200)!;
    expect((await whoAmI(one, winner.body.access_token)).status).toBe(200);
  });

  it('disabling a user on one replica stops their sessions and refresh tokens on the other at once', async () => {
    await one.createUser('carol');
    const session = (await one.request('POST', '/api/auth/signin', { json: { username: 'carol', password: USER_PASSWORD } })).body;
    expect((await whoAmI(two, session.access_token)).status).toBe(200);
    expect((await one.request('PATCH', '/api/admin/users/carol', { token: one.adminToken, json: { disabled: true } })).status).toBe(200);
    expect((await whoAmI(two, session.access_token)).status).toBe(401);
    expect((await refreshB(two, session.refresh_token)).status).toBe(401);
  });

  it('lifetimes come from auth.jwt: expiresIn for sessions, stayLoggedInExpiresIn for stay-logged-in ones', async () => {
    const lifetime = (token: string) => {
      const claims = decodeJwt(token);
      return claims.exp! - claims.iat!;
    };
    expect(lifetime((await signIn(one)).access_token)).toBe(90 * 60);
    expect(lifetime((await signIn(one, true)).access_token)).toBe(30 * 86_400);
    expect(lifetime((await signIn(one)).refresh_token)).toBe(2 * 3600);
  });
});

describe('auth.jwt configuration', () => {
  const base = {
    BOXYARD_DATABASE__URL: 'postgres://x/y',
    BOXYARD_STORAGE__DRIVER: 'local',
    BOXYARD_STORAGE__ROOT: '/tmp/x',
    BOXYARD_SESSION__SECRET: 'k'.repeat(40),
  };
  it("takes the seed's key from the environment (camelCase in a lower-cased variable) with units", () => {
    const config = loadConfig(boxRepositoryConfigSchema, {
      env: { ...base, BOXYARD_AUTH__JWT__EXPIRESIN: '24h', BOXYARD_AUTH__JWT__STAYLOGGEDINEXPIRESIN: '7d' },
    });
    expect(config.auth.jwt.expiresIn).toBe(86_400);
    expect(config.auth.jwt.stayLoggedInExpiresIn).toBe(7 * 86_400);
  });
  it('stops start-up naming the key for a lifetime it cannot read', () => {
    expect(() => loadConfig(boxRepositoryConfigSchema, { env: { ...base, BOXYARD_AUTH__JWT__EXPIRESIN: 'soon' } })).toThrow(/auth\.jwt\.expiresIn/);
  });
  it('stops start-up when the configured admin password breaks the password rules', () => {
    expect(() => loadConfig(boxRepositoryConfigSchema, { env: { ...base, BOXYARD_ADMIN__PASSWORD: 'password' } })).toThrow(
      /admin\.password: does not meet the password rules: .*upper-case.*digit/,
    );
    expect(() => loadConfig(boxRepositoryConfigSchema, { env: { ...base, BOXYARD_ADMIN__PASSWORD: 'Password1' } })).toThrow(/admin\.password: .*commonly used/);
  });
});
