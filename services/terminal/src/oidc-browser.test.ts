// The terminal page signs in through a real OpenID provider in Debian's Chromium: "Sign in with Test IdP", the
// provider's own login and consent forms, back to a shell that answers `echo $((6*7))`; sign-out ends the
// session here and, after the provider's confirmation page, there. The provider is on `localhost` and the
// terminal on 127.0.0.1 — two sites, as in real deployments — so SameSite rules apply as they would for users.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { startOidcProvider, type RunningOidcProvider } from '@boxyard/test/harness/oidc-provider.ts';
import { freePort } from '@boxyard/test/harness/ports.ts';
import { api, startTestGateway } from './testing/test-gateway.ts';

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

describe('browser terminal with provider sign-in (Chromium)', () => {
  let idp: RunningOidcProvider;
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const callbacks: number[] = [];

  beforeAll(async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    idp = await startOidcProvider({
      host: 'localhost',
      resources: ['https://terminal.example.test'],
      clients: [
        {
          client_id: 'terminal-web',
          client_secret: 'terminal-web-secret-0123456789',
          redirect_uris: [`${url}/auth/oidc/callback`],
          post_logout_redirect_uris: [`${url}/`],
        },
      ],
      users: [{ login: 'alice', groups: ['ops'] }],
    });
    gateway = await startTestGateway(await createTestDatabase('terminal_oidc_browser'), {
      server: { port },
      auth: {
        resource_server: { admin_groups: ['ops'] },
        sign_in: {
          enabled: true,
          issuer: idp.issuer,
          client_id: 'terminal-web',
          client_secret: 'terminal-web-secret-0123456789',
          scopes: ['openid', 'profile', 'email', 'groups'],
          display_name: 'Test IdP',
        },
      },
    });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1000, height: 600 } });
    // The provider's development pages import a web font: nothing leaves this machine.
    await page.route('**/*', (route) => (['127.0.0.1', 'localhost'].includes(new URL(route.request().url()).hostname) ? route.continue() : route.abort()));
    page.on('response', (response) => {
      if (response.url().includes('/auth/oidc/callback')) callbacks.push(response.status());
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && page.url().startsWith(gateway.url)) problems.push(`console: ${message.text()}`);
    });
  });

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await idp?.stop();
  });

  const screen = () => page.locator('.xterm-rows');
  let oldCookie: string;

  it('signs in through the provider and gets a shell', async () => {
    await page.goto(gateway.url);
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/terminal-sign-in.png` });
    const button = page.getByRole('link', { name: 'Sign in with Test IdP' });
    await button.click();
    // The provider's development login form (any password), then its consent form.
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toMatch(/Connected|Reattached/);
    expect(page.url()).toBe(`${gateway.url}/`);
    // Back from another site, the callback answers a page that moves on by itself (a same-site hop, so the
    // SameSite=Strict session cookie goes along), not a redirect.
    expect(callbacks).toEqual([200]);
    await expect.poll(() => page.locator('#who').textContent()).toBe('alice');
    await page.locator('.xterm').click();
    await page.keyboard.type('echo $((6*7))');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await screen().innerText()).split('\n').map((line) => line.trim()), { timeout: 20_000 }).toContain('42');

    const cookies = await page.context().cookies(gateway.url);
    const session = cookies.find((c) => c.name === 'auth_token');
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
    // The sign-in transaction is over: its cookie is gone.
    expect(cookies.find((c) => c.name.startsWith('boxyard_oidc_'))).toBeUndefined();
    oldCookie = `auth_token=${session!.value}`;
    expect((await api(gateway.url, 'GET', '/auth/status', { cookie: oldCookie })).json.data.user).toMatchObject({ username: 'alice', role: 'admin' });
  });

  it('signs out of the terminal and of the provider', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The provider asks for confirmation of its own sign-out, then sends the browser back.
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.waitForURL(`${gateway.url}/`);
    // Wait for it: the page renders its sign-in choices after asking /auth/status (isVisible() would not wait).
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor({ state: 'visible' });
    expect((await page.context().cookies(gateway.url)).find((c) => c.name === 'auth_token')).toBeUndefined();
    // The old session cookie is revoked, not just forgotten by the browser.
    expect((await api(gateway.url, 'GET', '/auth/status', { cookie: oldCookie })).json.data.authenticated).toBe(false);
    expect((await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie: oldCookie })).status).toBe(401);
    // Signing in again asks the provider for credentials: its session ended too.
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.locator('input[name="login"]').waitFor({ state: 'visible' });
    expect(problems).toEqual([]);
  });
});
