// The browser page in Debian's Chromium: sign in, get a shell, type a command, read the answer off the
// xterm.js screen; reload reattaches to the same shell. Plain HTTP on 127.0.0.1: Chromium treats loopback as a
// secure context and keeps the Secure auth_token cookie there, which this test relies on.
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, login, startTestGateway } from './testing/test-gateway.ts';

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

describe('browser terminal (Chromium)', () => {
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_browser'));
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1000, height: 600 } });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
  });

  afterAll(async () => {
    await browser?.close();
    if (gateway) {
      const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
      for (const session of (await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie })).json.data.sessions) await gateway.sessions.stop(session.id);
      await gateway.close();
    }
  });

  const screen = () => page.locator('.xterm-rows');

  it('signs in, starts a shell and shows the result of a typed command', async () => {
    await page.goto(gateway.url);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toMatch(/Connected|Reattached/);
    await page.locator('.xterm').click();
    await page.keyboard.type('echo $((6*7))');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await screen().innerText()).split('\n').map((line) => line.trim()), { timeout: 20_000 }).toContain('42');
    // The Secure, HttpOnly cookie was kept on http://127.0.0.1 and is invisible to scripts.
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === 'auth_token')).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
    expect(await page.evaluate('document.cookie')).not.toContain('auth_token');
  });

  it('resizes the shell with the window', async () => {
    await page.setViewportSize({ width: 700, height: 400 });
    await page.locator('.xterm').click();
    await page.keyboard.type('stty size | tr " " x');
    await page.keyboard.press('Enter');
    // The fit add-on resized the terminal; the shell sees a size other than the 80x24 default.
    await expect.poll(async () => /^\d+x\d+$/m.exec((await screen().innerText()).replace(/\u00a0/g, ' '))?.[0], { timeout: 20_000 }).toMatch(/^\d+x\d+$/);
    const size = /^(\d+)x(\d+)$/m.exec((await screen().innerText()).replace(/\u00a0/g, ' '))!;
    expect(Number(size[2])).toBeLessThan(120);
    expect(`${size[1]}x${size[2]}`).not.toBe('24x80');
  });

  it('reattaches to the same shell after a reload, with its earlier output', async () => {
    const before = (await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie: await login(gateway.url, 'admin', ADMIN_PASSWORD) })).json.data.sessions;
    expect(before).toHaveLength(1);
    await page.reload();
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toBe('Reattached');
    await expect.poll(async () => (await screen().innerText()).split('\n').map((line) => line.trim()), { timeout: 20_000 }).toContain('42');
    const after = (await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie: await login(gateway.url, 'admin', ADMIN_PASSWORD) })).json.data.sessions;
    expect(after.map((s: { id: string }) => s.id)).toEqual(before.map((s: { id: string }) => s.id));
    expect(problems).toEqual([]);
  });
});
