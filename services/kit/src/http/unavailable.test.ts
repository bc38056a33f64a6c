// Which failures are "the database is away" (503 + Retry-After) and which are not, with errors raised by a real
// PostgreSQL and a real refused connection rather than hand-made ones.
import { sql, UniqueIntegrityConstraintViolationError } from 'slonik';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { startTcpProxy } from '@boxyard/test/harness/tcp-proxy.ts';
import { StorageUnavailableError } from '../storage/errors.ts';
import { toHttpError } from './error-handler.ts';
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from './unavailable.ts';
import { ignoreError } from '../errors/ignore-error.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('should have failed'),
    (error: unknown) => error,
  );

describe('dependency failures become 503 with Retry-After', () => {
  let url: string;
  let pool: DatabasePool;
  beforeAll(async () => {
    url = await createTestDatabase('unavail');
    pool = await createDatabasePool({ url });
  });
  afterAll(() => pool?.end());

  it('a refused connection', async () => {
    const target = new URL(url);
    const hop = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const throughHop = await createDatabasePool({ url: hop.through(url) });
    await hop.close();
    const error = await failure(throughHop.query(sql.unsafe`select 1`));
    await throughHop.end();
    expect(isDatabaseUnavailable(error)).toBe(true);
    const http = toHttpError(error, 'problem');
    expect(http.statusCode).toBe(503);
    expect(http.headers['Retry-After']).toBe(String(RETRY_AFTER_SECONDS));
    expect(http.message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
  });

  it('a connection the server terminated (what a dying or restarting server does)', async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    client.on('error', () => {});
    const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    const killed = failure(client.query('select pg_sleep(5)'));
    await pool.query(sql.unsafe`select pg_terminate_backend(${pid})`);
    const error = await killed;
    await client.end().catch(ignoreError('teardown: the connection may be gone'));
    expect((error as { code?: string }).code).toBe('57P01');
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(toHttpError(error, 'envelope').statusCode).toBe(503);
  });

  it('an unwritable storage; but not a caller-made conflict or a bug', async () => {
    const storage = toHttpError(new StorageUnavailableError('local storage at /srv/secret is not usable: EROFS'), 'envelope');
    expect(storage.statusCode).toBe(503);
    expect(storage.headers['Retry-After']).toBe(String(RETRY_AFTER_SECONDS));
    expect(storage.message).not.toContain('/srv/secret');

    await pool.query(sql.unsafe`create table t (id int primary key)`);
    await pool.query(sql.unsafe`insert into t values (1)`);
    const duplicate = await failure(pool.query(sql.unsafe`insert into t values (1)`));
    expect(duplicate).toBeInstanceOf(UniqueIntegrityConstraintViolationError);
    expect(isDatabaseUnavailable(duplicate)).toBe(false);
    expect(toHttpError(new Error('a bug'), 'problem').statusCode).toBe(500);
  });
});
