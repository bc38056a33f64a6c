// Cross-site request forgery (issue 12): a browser sends the auth_token cookie and cached Basic credentials along
// with any request another site's page makes. State-changing requests from a foreign origin are refused with 403
// and change nothing; the share's own pages and non-browser clients (no Origin) work as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, adminAuth, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

let test: TestShare;
let cookie: string;
const evil = 'https://evil.example';

beforeAll(async () => {
  test = await startTestShare({ storage: 'local' });
  const login = await fetch(`${test.url}/auth/login/basic`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  expect(login.status).toBe(200);
  cookie = `auth_token=${((await login.json()) as { data: { token: string } }).data.token}`;
  expect((await upload(test.url, '/keep.txt', 'keep me', adminAuth)).status).toBe(201);
});
afterAll(() => test?.close());

function formUpload(path: string, headers: Record<string, string>): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob(['forged']), 'forged.txt');
  return fetch(`${test.url}${path}`, { method: 'POST', headers, body: form });
}
const exists = async (path: string) => (await fetch(`${test.url}${path}`, { headers: { authorization: adminAuth } })).status === 200;

describe('cross-site writes', () => {
  it('refuses an upload and a delete from another origin, with the cookie or with Basic', async () => {
    const ambient: Record<string, string>[] = [{ cookie }, { authorization: adminAuth }];
    for (const credentials of ambient) {
      const forged = await formUpload('/forged.txt', { ...credentials, origin: evil });
      expect(forged.status).toBe(403);
      expect(await forged.json()).toMatchObject({ success: false, message: `Origin ${evil} is not allowed` });
      const deleted = await fetch(`${test.url}/keep.txt`, { method: 'DELETE', headers: { ...credentials, origin: evil } });
      expect(deleted.status).toBe(403);
    }
    // A browser that left Origin out still names the site.
    expect((await formUpload('/forged.txt', { cookie, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(await exists('/forged.txt')).toBe(false);
    expect(await exists('/keep.txt')).toBe(true);
  });

  it("accepts the share's own pages and clients that are not browsers", async () => {
    expect((await formUpload('/own-page.txt', { cookie, origin: new URL(test.url).origin, 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    expect((await formUpload('/curl.txt', { authorization: adminAuth })).status).toBe(201);
    // Reading stays open to any origin's links (a GET changes nothing).
    expect((await fetch(`${test.url}/keep.txt`, { headers: { cookie, origin: evil, 'sec-fetch-site': 'cross-site' } })).status).toBe(200);
  });
});
