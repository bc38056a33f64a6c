// The account watch on the run's PostgreSQL: notifications from the triggers, one schema's only, and a resync
// after its connection is killed (notifications sent meanwhile are lost, so listeners must re-check).
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { createAccountWatch, type AccountChange, type AccountWatch } from './account-watch.ts';
import { accountMigrations, createAccounts } from './accounts.ts';

let url: string;
let pool: DatabasePool;
let other: DatabasePool;
let watch: AccountWatch;
const seen: AccountChange[] = [];

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(check()).toBe(true);
}

beforeAll(async () => {
  url = await createTestDatabase('watch');
  await migrate(url, 'one', [accountMigrations]);
  await migrate(url, 'two', [accountMigrations]);
  pool = await createDatabasePool({ url, schema: 'one' });
  other = await createDatabasePool({ url, schema: 'two' });
  watch = createAccountWatch({ databaseUrl: url, schema: 'one', log: { warn: () => {} }, reconnectMs: 100 });
  watch.subscribe((change) => seen.push(change));
  await watch.start();
});
afterAll(async () => {
  await watch?.close();
  await pool?.end();
  await other?.end();
});

describe('account watch', () => {
  it('reports sign-outs and user changes of its own schema only', async () => {
    const accounts = createAccounts(pool);
    const user = await accounts.create({ username: 'wendy', password: 'Wendy-Pass-42', role: 'user' });
    await createAccounts(other).revokeSession('elsewhere', new Date(Date.now() + 60_000));
    await accounts.revokeSession('jti-1', new Date(Date.now() + 60_000));
    await accounts.update(user.id, { role: 'admin' });
    await accounts.remove(user.id);
    await until(() => seen.filter((c) => c.kind === 'user').length === 2);
    expect(seen).toEqual([
      { kind: 'revoked', jti: 'jti-1' },
      { kind: 'user', id: user.id },
      { kind: 'user', id: user.id },
    ]);
  });

  it('reconnects after its connection is killed and says resync; later changes arrive again', async () => {
    seen.length = 0;
    await pool.query(sql.unsafe`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'boxyard-account-watch-one'`);
    await until(() => seen.some((c) => c.kind === 'resync'));
    await createAccounts(pool).revokeSession('jti-2', new Date(Date.now() + 60_000));
    await until(() => seen.some((c) => c.kind === 'revoked' && c.jti === 'jti-2'));
  });
});
