import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { checkPassword } from '../auth/password-policy.ts';
import { UsernameTakenError, createAccounts, accountMigrations } from './accounts.ts';

let pool: DatabasePool;
beforeAll(async () => {
  const url = await createTestDatabase();
  await migrate(url, 'svc', [accountMigrations]);
  pool = await createDatabasePool({ url, schema: 'svc' });
});
afterAll(() => pool.end());

describe('accounts', () => {
  it('creates users with argon2id hashes and checks credentials, usernames case-insensitively', async () => {
    const accounts = createAccounts(pool);
    const user = await accounts.create({ username: 'Alice', password: 'Wonder-Land-7', role: 'user', email: 'alice@example.test' });
    expect(user).toMatchObject({ username: 'Alice', role: 'user', email: 'alice@example.test' });
    expect(user.created_at).toBeInstanceOf(Date);
    expect(await accounts.verifyCredentials('alice', 'Wonder-Land-7')).toMatchObject({ id: user.id });
    expect(await accounts.verifyCredentials('alice', 'wonder-land-7')).toBeUndefined();
    expect(await accounts.verifyCredentials('nobody', 'Wonder-Land-7')).toBeUndefined();
    await expect(accounts.create({ username: 'ALICE', password: 'Other-Pass-8', role: 'user' })).rejects.toThrow(UsernameTakenError);
    await accounts.create({ username: 'bob', password: 'Builder-Bob-3', role: 'user' });
    expect((await accounts.list()).map((u) => u.username)).toEqual(['Alice', 'bob']);
  });

  it('creates the first admin once, with a generated password that meets the policy', async () => {
    const accounts = createAccounts(pool);
    const first = await accounts.ensureAdmin({ username: 'admin' });
    expect(first.created).toBe(true);
    expect(checkPassword(first.password!)).toEqual([]);
    expect(await accounts.verifyCredentials('admin', first.password!)).toMatchObject({ role: 'admin' });
    expect(await accounts.ensureAdmin({ username: 'admin', password: 'Something-Else-9' })).toEqual({ created: false });
  });

  it('remembers revoked sessions', async () => {
    const accounts = createAccounts(pool);
    expect(await accounts.isSessionRevoked('jti-1')).toBe(false);
    await accounts.revokeSession('jti-1', new Date(Date.now() + 60_000));
    await accounts.revokeSession('jti-1', new Date(Date.now() + 60_000));
    expect(await accounts.isSessionRevoked('jti-1')).toBe(true);
  });
});

describe('account administration', () => {
  it('disables (no sign-in, not found by credential checks, still listed), re-enables, changes roles and deletes', async () => {
    const accounts = createAccounts(pool);
    const user = await accounts.create({ username: 'carol', password: 'Carol-Pass-42', role: 'user' });
    expect(user.disabled).toBe(false);
    expect(await accounts.update(user.id, { disabled: true })).toMatchObject({ id: user.id, disabled: true, role: 'user' });
    expect(await accounts.verifyCredentials('carol', 'Carol-Pass-42')).toBeUndefined();
    expect(await accounts.findById(user.id)).toBeNull();
    expect(await accounts.findAnyById(user.id)).toMatchObject({ disabled: true });
    expect((await accounts.list()).find((u) => u.id === user.id)).toMatchObject({ disabled: true });
    expect((await accounts.activeAmong([user.id])).size).toBe(0);
    expect(await accounts.update(user.id, { disabled: false, role: 'admin' })).toMatchObject({ disabled: false, role: 'admin' });
    expect(await accounts.verifyCredentials('carol', 'Carol-Pass-42')).toMatchObject({ role: 'admin' });
    expect([...(await accounts.activeAmong([user.id])).keys()]).toEqual([user.id]);
    expect(await accounts.update('00000000-0000-4000-8000-000000000000', { disabled: true })).toBeNull();
    expect(await accounts.remove(user.id)).toBe(true);
    expect(await accounts.remove(user.id)).toBe(false);
  });

  it('finds which of many sessions are revoked in one query', async () => {
    const accounts = createAccounts(pool);
    await accounts.revokeSession('jti-a', new Date(Date.now() + 60_000));
    expect([...(await accounts.revokedAmong(['jti-a', 'jti-b']))]).toEqual(['jti-a']);
    expect((await accounts.revokedAmong([])).size).toBe(0);
  });
});
