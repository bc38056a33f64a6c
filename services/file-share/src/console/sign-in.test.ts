// The console's sign-in form and assets at the HTTP level: a successful sign-in sets the session cookie
// (HttpOnly, Secure, SameSite=Strict) and returns only to a path on this site (never `//host` or `/\host`: no
// open redirect); bad input gets the page again with a clear message, never a 500; unknown assets are 404s and
// known ones revalidate with their ETag; `/-` is the console's and can never be a file of the share.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, adminAuth, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { createSessionCookiePolicy } from '../auth/session-cookie.ts';
import { safeReturnTo } from './sign-in.ts';

let test: TestShare;
beforeAll(async () => {
  test = await startTestShare({ storage: 'local' });
});
afterAll(() => test?.close());

const signIn = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${test.url}/-/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });

describe('return_to', () => {
  it.each([
    ['/docs/?page=2', '/docs/?page=2'],
    ['//evil.example/', '/'],
    ['/\\evil.example', '/'],
    ['https://evil.example/', '/'],
    ['javascript:alert(1)', '/'],
    ['/a\r\nSet-Cookie: x=1', '/'],
    ['', '/'],
    // Percent-encoded, so it can go into the Location header (a raw € there was a 500).
    ['/docs/€ü?q=日本#κ', '/docs/%E2%82%AC%C3%BC?q=%E6%97%A5%E6%9C%AC#%CE%BA'],
  ])('%j goes to %j', (given, expected) => expect(safeReturnTo(given)).toBe(expected));
});

describe('sign-in form', () => {
  it('signs in with the session cookie and returns to the page it came from', async () => {
    const response = await signIn({ username: 'admin', password: ADMIN_PASSWORD, return_to: '/docs/?page=2' });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/docs/?page=2');
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^auth_token=[^;]+;/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    // The cookie is a working session.
    const listing = await fetch(`${test.url}/?format=json`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(listing.status).toBe(200);
  });

  it('marks the cookie Secure on HTTPS and loopback, and not on plain http elsewhere (where the browser would drop it)', async () => {
    const onHost = async (host: string) => {
      const response = await test.share.app.inject({
        method: 'POST',
        url: '/-/sign-in',
        headers: { host, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ username: 'admin', password: ADMIN_PASSWORD }).toString(),
      });
      expect(response.statusCode).toBe(303);
      return String(response.headers['set-cookie']);
    };
    expect(await onHost('files.lan:3001')).not.toMatch(/; Secure/);
    expect(await onHost('files.lan:3001')).toMatch(/; HttpOnly; SameSite=Strict$/);
    expect(await onHost('localhost:3001')).toMatch(/; Secure/);
    // An https public URL (TLS ended by a proxy) keeps it whatever the hop says.
    const policy = createSessionCookiePolicy('https://files.example.com');
    expect(policy.options({ hostname: 'files.lan', protocol: 'http' } as never).secure).toBe(true);
    expect(createSessionCookiePolicy(undefined).options({ hostname: 'files.lan', protocol: 'https' } as never).secure).toBe(true);
  });

  it('returns to a path with non-Latin-1 characters, percent-encoded (was: 500 after a successful sign-in)', async () => {
    const response = await signIn({ username: 'admin', password: ADMIN_PASSWORD, return_to: '/docs/€ü/?q=日本' });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/docs/%E2%82%AC%C3%BC/?q=%E6%97%A5%E6%9C%AC');
    expect(response.headers.get('set-cookie')).toMatch(/^auth_token=/);
  });

  it('never redirects off the site', async () => {
    for (const returnTo of ['//evil.example/x', '/\\evil.example', 'https://evil.example/']) {
      const response = await signIn({ username: 'admin', password: ADMIN_PASSWORD, return_to: returnTo });
      expect(response.headers.get('location')).toBe('/');
    }
  });

  it('answers a wrong password or a missing field with the page and a message, and sets no cookie', async () => {
    const wrong = await signIn({ username: 'admin', password: 'nope', return_to: '/x/' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const page = await wrong.text();
    expect(page).toContain('<p class="error" role="alert">Invalid username or password.</p>');
    expect(page).toContain('name="return_to" value="/x/"');
    const missing = await signIn({ username: 'admin' });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain('Enter a username and a password.');
    const xml = await fetch(`${test.url}/-/sign-in`, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<username>admin</username>' });
    expect(xml.status).toBe(415);
    expect(await xml.json()).toMatchObject({ success: false });
    const huge = await signIn({ username: 'admin', password: 'x'.repeat(20_000) });
    expect(huge.status).toBe(413);
  });

  it('is refused from another site (login forgery), as every write is', async () => {
    const forged = await signIn({ username: 'admin', password: ADMIN_PASSWORD }, { origin: 'https://evil.example' });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('set-cookie')).toBeNull();
  });

  it('signs out a session from the form: the cookie is cleared and the token revoked', async () => {
    const cookie = (await signIn({ username: 'admin', password: ADMIN_PASSWORD })).headers.get('set-cookie')!.split(';')[0]!;
    const out = await fetch(`${test.url}/-/sign-out`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
      redirect: 'manual',
    });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/');
    expect(out.headers.get('set-cookie')).toMatch(/^auth_token=;/);
    expect((await fetch(`${test.url}/?format=json`, { headers: { cookie } })).status).toBe(401);
  });
});

describe('assets and the reserved /-', () => {
  it('serves the listed assets with their types and ETag, and nothing else', async () => {
    const script = await fetch(`${test.url}/-/assets/files.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const etag = script.headers.get('etag')!;
    expect((await fetch(`${test.url}/-/assets/files.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await fetch(`${test.url}/-/assets/console.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const path of ['/-/assets/nope.js', '/-/assets/..%2Fsign-in.ts', '/-/assets/%2e%2e%2fassets.ts']) {
      const response = await fetch(`${test.url}${path}`);
      expect(response.status, path).toBe(404);
    }
    expect((await fetch(`${test.url}/-/nothing-here`, { headers: { authorization: adminAuth } })).status).toBe(404);
  });

  it("refuses `-` as a top-level name (it is the console's)", async () => {
    const made = await postJson(test.url, '/folders', { folderName: '-' }, adminAuth);
    expect(made.status).toBe(400);
    expect(await made.json()).toMatchObject({ success: false, message: 'Invalid path' });
    expect((await upload(test.url, '/docs/-', 'fine below the top', adminAuth)).status).toBe(201);
  });
});
