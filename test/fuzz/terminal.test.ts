// Fuzzes the terminal gateway's REST API with schemathesis, as the admin and as a plain user, against a gateway
// on the run's PostgreSQL with the local backend (real shells), seeded with a running session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../harness/fixtures.ts';
import { ADMIN_PASSWORD, api, createUser, login, startTestGateway } from '@boxyard/terminal/testing/test-gateway.ts';
import { fuzz, LONG } from './schemathesis.ts';
import { reportOf } from './report.ts';

let gateway: Awaited<ReturnType<typeof startTestGateway>>;
let adminCookie: string;
let userCookie: string;

beforeAll(async () => {
  gateway = await startTestGateway(await createTestDatabase('term'));
  adminCookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
  userCookie = (await createUser(gateway.url, adminCookie, 'member')).cookie;
  const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie: userCookie, body: { terminal_cookie: 'fuzz-seed' } });
  if (started.status >= 300) throw new Error(`start: ${started.status} ${JSON.stringify(started.json)}`);
});
afterAll(() => gateway?.close());

// Signing out would revoke the session the run authenticates with; the WebSocket is not an HTTP operation.
const excludePathRegex = '^/(auth/logout|ws/.*)$';

describe('terminal under schemathesis', { timeout: LONG ? 3_600_000 : 300_000 }, () => {
  it.each([
    ['admin', () => adminCookie],
    ['user', () => userCookie],
  ])('as %s: no server error, every answer as documented', async (role, cookie) => {
    const result = await fuzz({ schemaUrl: `${gateway.url}/openapi.json`, headers: { cookie: cookie() }, excludePathRegex });
    console.log(`[fuzz] terminal as ${role}: ${result.cases} cases over ${result.operations} operations`);
    expect(result.exitCode, reportOf(result)).toBe(0);
  });
});
