import { SignJWT, UnsecuredJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { checkPassword } from './password-policy.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { InvalidTokenError, createSessionTokens } from './session-tokens.ts';

const secret = 'x'.repeat(32);
const base = { issuer: 'https://boxyard.test', audience: 'box-repository', typ: 'boxyard-session+jwt', ttlSeconds: 60 };

describe('session tokens', () => {
  it('signs and verifies with subject, jti, expiry, kid and the dedicated typ', async () => {
    const tokens = createSessionTokens({ ...base, secrets: [secret] });
    const issued = await tokens.sign('user-1', { roles: ['admin'] });
    const header = JSON.parse(Buffer.from(issued.token.split('.')[0]!, 'base64url').toString());
    expect(header).toMatchObject({ alg: 'HS256', typ: 'boxyard-session+jwt' });
    expect(header.kid).toMatch(/^[\w-]{12}$/);
    const claims = await tokens.verify(issued.token);
    expect(claims).toMatchObject({ sub: 'user-1', jti: issued.jti, roles: ['admin'], iss: base.issuer, aud: base.audience });
  });

  it('refuses secrets shorter than 32 bytes at construction', () => {
    expect(() => createSessionTokens({ ...base, secrets: ['x'.repeat(31)] })).toThrow(/needs at least 32/);
  });

  it('refuses a token of another type, issuer, audience, algorithm or key', async () => {
    const tokens = createSessionTokens({ ...base, secrets: [secret] });
    const other = (typ: string, iss = base.issuer, aud = base.audience) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ })
        .setSubject('u')
        .setJti('j')
        .setIssuer(iss)
        .setAudience(aud)
        .setExpirationTime('1m')
        .sign(new TextEncoder().encode(secret));
    await expect(tokens.verify(await other('at+jwt'))).rejects.toThrow(InvalidTokenError);
    const kid = createSessionTokens({ ...base, secrets: [secret] });
    await expect(kid.verify(await other(base.typ, 'https://evil.test'))).rejects.toThrow(InvalidTokenError);
    await expect(kid.verify(await other(base.typ, base.issuer, 'file-share'))).rejects.toThrow(InvalidTokenError);
    const unsigned = new UnsecuredJWT({}).setSubject('u').setIssuer(base.issuer).setAudience(base.audience).setExpirationTime('1m').encode();
    await expect(tokens.verify(unsigned)).rejects.toThrow(InvalidTokenError);
    const stranger = createSessionTokens({ ...base, secrets: ['y'.repeat(32)] });
    await expect(tokens.verify((await stranger.sign('u')).token)).rejects.toThrow('unknown signing key');
  });

  it('says when a token has expired', async () => {
    const tokens = createSessionTokens({ ...base, secrets: [secret] });
    const { token } = await tokens.sign('u', {}, -10);
    await expect(tokens.verify(token)).rejects.toMatchObject({ expired: true });
  });

  it('keeps accepting tokens of a previous secret after rotation, and signs with the new one', async () => {
    const before = createSessionTokens({ ...base, secrets: [secret] });
    const old = await before.sign('u');
    const after = createSessionTokens({ ...base, secrets: ['n'.repeat(32), secret] });
    await expect(after.verify(old.token)).resolves.toMatchObject({ sub: 'u' });
    await expect(before.verify((await after.sign('u')).token)).rejects.toThrow(InvalidTokenError);
  });
});

describe('passwords', () => {
  it('hashes with argon2id and verifies', async () => {
    const hashed = await hashPassword('Correct-Horse-9');
    expect(hashed).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verifyPassword(hashed, 'Correct-Horse-9')).toBe(true);
    expect(await verifyPassword(hashed, 'correct-horse-9')).toBe(false);
    expect(await verifyPassword('not-a-hash', 'x')).toBe(false);
  });

  it('reports every failing rule of the policy', () => {
    expect(checkPassword('Tr0ub4dor&3x')).toEqual([]);
    expect(checkPassword('abc').map((f) => f.rule)).toEqual(['min_length', 'uppercase', 'digit']);
    expect(checkPassword('ALLUPPER123').map((f) => f.rule)).toEqual(['lowercase']);
    // Passes composition, but is on the maintained common-password list.
    expect(checkPassword('Password1').map((f) => f.rule)).toEqual(['common_password']);
  });
});
