// Fuzzes the file share's API with schemathesis, as the admin and as a plain user, against a share on the run's
// PostgreSQL and MinIO seeded with folders and files (so paths exist), and an API key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, adminAuth, createKey, createUser, postJson, startTestShare, upload, type TestShare } from '@boxyard/file-share/testing/test-share.ts';
import { fuzz, LONG } from './schemathesis.ts';
import { reportOf } from './report.ts';

let share: TestShare;
let adminSession: string;
let userSession: string;

/** A session token: Basic would verify the password (argon2) on every one of the fuzzer's requests. */
async function signIn(username: string, password: string): Promise<string> {
  const res = await postJson(share.url, '/auth/login/basic', { username, password });
  if (res.status !== 200) throw new Error(`sign-in of ${username}: ${res.status} ${await res.text()}`);
  return `Bearer ${((await res.json()) as { data: { token: string } }).data.token}`;
}

beforeAll(async () => {
  share = await startTestShare({ storage: 's3' });
  const member = await createUser(share.url, 'member', 'user');
  adminSession = await signIn('admin', ADMIN_PASSWORD);
  userSession = await signIn('member', member.password);
  const expectOk = async (response: Promise<Response>, what: string) => {
    const res = await response;
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  };
  await expectOk(postJson(share.url, '/folders', { folderName: 'docs' }, adminAuth), 'folder');
  await expectOk(upload(share.url, '/docs/', 'hello', adminAuth, 'a.txt'), 'upload');
  // "0" is a name the generator tries first for a path.
  await expectOk(upload(share.url, '/', 'top', adminAuth, '0'), 'upload');
  await createKey(share.url, adminAuth, { name: 'fuzz', permissions: ['downloads'] });
});
afterAll(() => share?.close());

// The event stream never ends by itself; signing out would revoke the session the run authenticates with.
const excludePathRegex = '^/(events|auth/logout)$';

describe('file share under schemathesis', { timeout: LONG ? 3_600_000 : 300_000 }, () => {
  it.each([
    ['admin', () => adminSession],
    ['user', () => userSession],
  ])('as %s: no server error, every answer as documented', async (role, authorization) => {
    const result = await fuzz({ schemaUrl: `${share.url}/openapi.json`, headers: { authorization: authorization() }, excludePathRegex });
    console.log(`[fuzz] file-share as ${role}: ${result.cases} cases over ${result.operations} operations`);
    expect(result.exitCode, reportOf(result)).toBe(0);
  });
});
