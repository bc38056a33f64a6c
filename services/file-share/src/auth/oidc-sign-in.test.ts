// Provider sign-in on the file share, against the harness's real OpenID provider: Chromium goes from the
// "Sign in required" page through the provider's forms back to the listing, uploads through the page's file picker
// and signs out of both; at the HTTP level, the session lists and uploads per the user's role (admin through
// admin_groups), the listing offers the sign-in link to anonymous readers, and tools still get the Basic challenge.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CookieJar, request, signInAtProvider } from '@boxyard/test/harness/oidc-login.ts';
import { startOidcProvider, type RunningOidcProvider } from '@boxyard/test/harness/oidc-provider.ts';
import { freePort } from '@boxyard/test/harness/ports.ts';
import { startTestShare, type TestShare } from '../testing/test-share.ts';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SECRET = 'file-share-web-secret-0123456789';

/** A share on a port chosen first, and a provider that knows its redirect URIs. */
async function shareWithProvider(options: { host?: 'localhost' | '127.0.0.1'; publicRead?: boolean }) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const idp = await startOidcProvider({
    host: options.host ?? '127.0.0.1',
    resources: ['https://files.example.test'],
    clients: [{ client_id: 'files-web', client_secret: SECRET, redirect_uris: [`${url}/auth/oidc/callback`], post_logout_redirect_uris: [`${url}/`] }],
    users: [
      { login: 'alice', groups: ['storage-admins'] },
      { login: 'bob', groups: ['staff'] },
    ],
  });
  const share = await startTestShare({
    storage: 'local',
    overrides: {
      server: { port },
      public_read: options.publicRead ?? false,
      auth: {
        resource_server: { admin_groups: ['storage-admins'] },
        sign_in: {
          enabled: true,
          issuer: idp.issuer,
          client_id: 'files-web',
          client_secret: SECRET,
          scopes: ['openid', 'profile', 'email', 'groups'],
          display_name: 'Test IdP',
        },
      },
    },
  });
  return { share, idp };
}

describe('file share: provider sign-in in Chromium', () => {
  let share: TestShare;
  let idp: RunningOidcProvider;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    // The provider on another site (localhost vs 127.0.0.1): the share's SameSite=Strict cookie must still
    // reach the listing the browser lands on.
    ({ share, idp } = await shareWithProvider({ host: 'localhost' }));
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
    page = await browser.newPage();
    await page.route('**/*', (route) => (['127.0.0.1', 'localhost'].includes(new URL(route.request().url()).hostname) ? route.continue() : route.abort()));
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // On the share's pages (the provider's load a font we block): the "sign in required" page is a 401 by
      // design; anything else (a CSP violation, say) is a problem.
      if (message.type() === 'error' && page.url().startsWith(share.url) && !message.text().includes('status of 401'))
        problems.push(`console: ${message.text()}`);
    });
  });

  afterAll(async () => {
    await browser?.close();
    await share?.close();
    await idp?.stop();
  });

  it('signs in from the "sign in required" page, lands on the listing signed in, and uploads through it', async () => {
    const first = await page.goto(`${share.url}/`);
    expect(first?.status()).toBe(401);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.locator('input[name="login"]').fill('bob');
    await page.locator('input[name="password"]').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.waitForURL(`${share.url}/`);
    await expect.poll(() => page.locator('body').innerText()).toContain('Signed in as bob');
    // bob may upload (role user): the console's file picker is there and works.
    await page.locator('#pick-files').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from bob\n') });
    await expect.poll(() => page.getByRole('link', { name: 'hello.txt' }).count()).toBe(1);
    const cookie = (await page.context().cookies(share.url)).find((c) => c.name === 'auth_token');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
  });

  it("signs out of the share and of the provider, from the page's plain form (strict CSP kept)", async () => {
    const session = (await page.context().cookies(share.url)).find((c) => c.name === 'auth_token')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.waitForURL(`${share.url}/`);
    await expect.poll(() => page.locator('h1').innerText()).toBe('Sign in required');
    // The old session token is revoked.
    const old = await fetch(`${share.url}/?format=json`, { headers: { cookie: `auth_token=${session.value}` } });
    expect(old.status).toBe(401);
    expect(problems).toEqual([]);
  });
});

describe('file share: provider sign-in over HTTP', () => {
  let share: TestShare;
  let idp: RunningOidcProvider;

  beforeAll(async () => {
    ({ share, idp } = await shareWithProvider({ publicRead: true }));
  });
  afterAll(async () => {
    await share?.close();
    await idp?.stop();
  });

  async function signIn(login: string) {
    const jar = new CookieJar();
    const start = await request(jar, `${share.url}/auth/oidc/login?return_to=/`);
    const done = await request(jar, await signInAtProvider(jar, start.location!, login));
    expect(done.status).toBe(303);
    return `auth_token=${jar.get(new URL(share.url), 'auth_token')}`;
  }

  const upload = (cookie: string, path: string, text: string) => {
    const form = new FormData();
    form.append('file', new Blob([text]), path.split('/').pop()!);
    return fetch(`${share.url}${path}`, { method: 'POST', headers: { cookie }, body: form });
  };

  it('returns to a return_to with non-Latin-1 characters, percent-encoded in the Location header, signed in', async () => {
    const jar = new CookieJar();
    const start = await request(jar, `${share.url}/auth/oidc/login?return_to=${encodeURIComponent('/docs/€ü/?q=日本#κ')}`);
    expect(start.status).toBe(303);
    const done = await request(jar, await signInAtProvider(jar, start.location!, 'bob'));
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/docs/%E2%82%AC%C3%BC/?q=%E6%97%A5%E6%9C%AC#%CE%BA');
    expect(jar.get(new URL(share.url), 'auth_token')).toBeTruthy();
  });

  it("gives a session that lists and uploads per the user's role", async () => {
    const bob = await signIn('bob');
    expect((await upload(bob, '/docs/bob.txt', 'bob')).status).toBe(201);
    const listing = await fetch(`${share.url}/docs/?format=json`, { headers: { cookie: bob } });
    expect(((await listing.json()) as { files: { name: string }[] }).files.map((f: { name: string }) => f.name)).toEqual(['bob.txt']);
    // A user may not delete; an admin (through admin_groups) may.
    expect((await fetch(`${share.url}/docs/bob.txt`, { method: 'DELETE', headers: { cookie: bob } })).status).toBe(403);
    const alice = await signIn('alice');
    expect((await fetch(`${share.url}/docs/bob.txt`, { method: 'DELETE', headers: { cookie: alice } })).status).toBe(200);
    const users = (await (await fetch(`${share.url}/api/users`, { headers: { cookie: alice } })).json()) as { data: { users: unknown[] } };
    expect(users.data.users).toEqual(
      expect.arrayContaining([expect.objectContaining({ username: 'alice', role: 'admin' }), expect.objectContaining({ username: 'bob', role: 'user' })]),
    );
    expect((await fetch(`${share.url}/api/users`, { headers: { cookie: bob } })).status).toBe(403);
  });

  it('offers the sign-in link on the listing to anonymous readers, and sign-out to sessions', async () => {
    const anonymous = await (await fetch(`${share.url}/`, { headers: { accept: 'text/html' } })).text();
    expect(anonymous).toContain('<a href="/auth/oidc/login?return_to=%2F">Sign in with Test IdP</a>');
    const signedIn = await (await fetch(`${share.url}/`, { headers: { accept: 'text/html', cookie: await signIn('bob') } })).text();
    expect(signedIn).toContain('Signed in as bob');
    expect(signedIn).toContain('<form class="inline" method="post" action="/auth/oidc/logout">');
    const methods = (await (await fetch(`${share.url}/auth/methods`)).json()) as { data: { methods: unknown[] } };
    expect(methods.data.methods).toContainEqual(
      expect.objectContaining({
        type: 'oidc',
        path: '/auth/oidc/login?return_to=/',
        logout: '/auth/oidc/logout',
        display_name: 'Test IdP',
        cookie: 'auth_token',
      }),
    );
  });

  it('keeps the Basic challenge for tools where reading needs a sign-in', async () => {
    const { share: closed, idp: closedIdp } = await shareWithProvider({ publicRead: false });
    try {
      const tool = await fetch(`${closed.url}/`, { headers: { accept: '*/*' } });
      expect(tool.status).toBe(401);
      expect(tool.headers.get('www-authenticate')).toMatch(/^Basic /);
      const browserLike = await fetch(`${closed.url}/docs/?page=2`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      expect(browserLike.status).toBe(401);
      expect(browserLike.headers.get('www-authenticate')).not.toMatch(/Basic/);
      expect(await browserLike.text()).toContain('<a href="/auth/oidc/login?return_to=%2Fdocs%2F%3Fpage%3D2">Sign in with Test IdP</a>');
    } finally {
      await closed.close();
      await closedIdp.stop();
    }
  });
});
