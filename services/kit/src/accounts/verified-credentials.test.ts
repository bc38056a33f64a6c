// Basic credentials are verified with argon2 once, then recognised for a minute without it — but never after the
// password changed or the user was deleted, and a wrong password is never remembered. argon2 itself runs for
// real; the spy only counts its calls.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as argon2 from '@node-rs/argon2';
import { sql } from 'slonik';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { accountMigrations, createAccounts } from './accounts.ts';

const argon2Calls = vi.hoisted(() => ({ verify: 0 }));
vi.mock('@node-rs/argon2', async (importOriginal) => {
  const real = await importOriginal<typeof argon2>();
  return { ...real, verify: (...args: Parameters<typeof real.verify>) => (argon2Calls.verify++, real.verify(...args)) };
});

let pool: DatabasePool;
beforeAll(async () => {
  const url = await createTestDatabase();
  await migrate(url, 'svc', [accountMigrations]);
  pool = await createDatabasePool({ url, schema: 'svc' });
});
afterAll(() => pool.end());

/** argon2 verifications done by `body`. */
async function argon2During(body: () => Promise<unknown>): Promise<number> {
  const before = argon2Calls.verify;
  await body();
  return argon2Calls.verify - before;
}

describe('verified Basic credentials', () => {
  it('runs argon2 once for repeated Basic requests, and on every sign-in', async () => {
    const accounts = createAccounts(pool);
    const user = await accounts.create({ username: 'carol', password: 'Carol-Pass-42', role: 'user' });
    expect(
      await argon2During(async () => {
        for (let i = 0; i < 20; i++) expect(await accounts.verifyCredentials('Carol', 'Carol-Pass-42', { cached: true })).toMatchObject({ id: user.id });
      }),
    ).toBe(1);
    expect(await argon2During(() => accounts.verifyCredentials('carol', 'Carol-Pass-42'))).toBe(1);
  });

  it('never remembers a wrong password, and pays argon2 for each (unknown users too)', async () => {
    const accounts = createAccounts(pool);
    await accounts.create({ username: 'dave', password: 'Dave-Pass-42', role: 'user' });
    expect(
      await argon2During(async () => {
        for (let i = 0; i < 3; i++) expect(await accounts.verifyCredentials('dave', 'wrong-one', { cached: true })).toBeUndefined();
        expect(await accounts.verifyCredentials('nobody-here', 'Dave-Pass-42', { cached: true })).toBeUndefined();
      }),
    ).toBe(4);
  });

  it('forgets a remembered credential as soon as the password changes or the user is deleted', async () => {
    const accounts = createAccounts(pool);
    const user = await accounts.create({ username: 'erin', password: 'Erin-Pass-42', role: 'user' });
    expect(await accounts.verifyCredentials('erin', 'Erin-Pass-42', { cached: true })).toBeDefined();
    await accounts.setPassword(user.id, 'Erin-New-Pass-43');
    expect(await accounts.verifyCredentials('erin', 'Erin-Pass-42', { cached: true })).toBeUndefined();
    expect(await accounts.verifyCredentials('erin', 'Erin-New-Pass-43', { cached: true })).toBeDefined();
    await pool.query(sql.unsafe`delete from users where id = ${user.id}::uuid`);
    expect(await accounts.verifyCredentials('erin', 'Erin-New-Pass-43', { cached: true })).toBeUndefined();
    // A new account under the same name with the same password is another user: verified afresh.
    const again = await accounts.create({ username: 'erin', password: 'Erin-New-Pass-43', role: 'user' });
    expect(
      await argon2During(async () => expect(await accounts.verifyCredentials('erin', 'Erin-New-Pass-43', { cached: true })).toMatchObject({ id: again.id })),
    ).toBe(1);
  });
});
