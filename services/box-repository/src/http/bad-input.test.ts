// Inputs the fuzzer (test/fuzz) found answered with a 500 or outside the OpenAPI description: each is a caller's
// mistake and gets a clear 4xx in the problem-details shape.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../testing/test-service.ts';

let service: TestService;
beforeAll(async () => (service = await startTestService()));
afterAll(() => service?.close());

describe('numbers past what the database holds', () => {
  it('refuses a page number past 2^63 with 422, not 500', async () => {
    for (const page of ['9223372036854775808', '99999999999999999999', '1e400']) {
      const res = await service.request('GET', `/api/organization?page=${page}`, { token: service.adminToken });
      expect(res.status, `page=${page}`).toBe(422);
      expect(res.body).toMatchObject({ errors: [expect.objectContaining({ pointer: '/query/page' })] });
    }
  });

  it('refuses an organization id past 2^53 with 422, not 500', async () => {
    const res = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization_id: 2 ** 63 } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ errors: [expect.objectContaining({ pointer: '/organization_id', rule: 'maximum' })] });
  });
});

describe('a resource deleted while a request on it runs', () => {
  it('answers 404 to an update whose organization another request deleted meanwhile, not 500', async () => {
    const { createOrganization } = await import('../testing/test-service.ts');
    await createOrganization(service, 'racing');
    const locker = new pg.Client({ connectionString: service.databaseUrl });
    const watcher = new pg.Client({ connectionString: service.databaseUrl });
    await Promise.all([locker.connect(), watcher.connect()]);
    try {
      // Hold the row, so the update below waits after its request has found the organization.
      await locker.query(`set search_path to ${service.config.database.schema}`);
      await locker.query('begin');
      await locker.query(`select id from organizations where name = 'racing' for update`);
      const update = service.request('PATCH', '/api/organization/racing', { token: service.adminToken, json: { description: 'x' } });
      await waitFor(
        async () =>
          (
            await watcher.query(
              `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%update organizations%' and pid <> pg_backend_pid()`,
            )
          ).rowCount === 1,
      );
      await locker.query(`delete from organizations where name = 'racing'`);
      await locker.query('commit');
      const res = await update;
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
  });
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the update never waited on the row lock');
}
