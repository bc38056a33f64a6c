// Fuzzes the box repository's API with schemathesis, as the global admin and as a plain member, against a
// service on the run's PostgreSQL and MinIO seeded with an organization, a box down to a file, and members.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createBoxPath, createOrganization, startTestService, uploadRaw, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { makeBox } from '@boxyard/box-repository/testing/boxes.ts';
import { fuzz, LONG } from './schemathesis.ts';
import { reportOf } from './report.ts';

const path = { org: 'acme', box: 'base', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
let service: TestService;
let userToken: string;

beforeAll(async () => {
  service = await startTestService({ storage: 's3' });
  await createOrganization(service, path.org);
  const user = await service.createUser('member');
  await addMember(service, path.org, user.username, 'user');
  userToken = user.token;
  await createBoxPath(service, service.adminToken, path, { isPublic: false });
  const uploaded = await uploadRaw(service, path, await makeBox(), { token: service.adminToken });
  if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
});
afterAll(() => service?.close());

// Signing out would revoke the very token the run authenticates with; the SMTP test would send real mail to
// whatever hosts the fuzzer makes up (each up to its 15 s timeout). Its input rules are tested in invitations.test.ts.
const excludePathRegex = '^/api/auth/signout$|^/api/mail/test-smtp$';

describe('box repository under schemathesis', { timeout: LONG ? 3_600_000 : 300_000 }, () => {
  it.each([
    ['admin', () => service.adminToken],
    ['member', () => userToken],
  ])('as %s: no server error, every answer as documented', async (role, token) => {
    const result = await fuzz({ schemaUrl: `${service.url}/openapi.json`, headers: { 'x-access-token': token() }, excludePathRegex });
    console.log(`[fuzz] box-repository as ${role}: ${result.cases} cases over ${result.operations} operations`);
    expect(result.exitCode, reportOf(result)).toBe(0);
  });
});
