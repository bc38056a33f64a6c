// The terminal page when its calls fail, in Debian's Chromium: a start whose answer is lost mid-flight (the
// request reached the gateway, which started the session, but the browser saw the connection reset, as with
// net::ERR_NETWORK_CHANGED when a session pod's interface appears on the host), a socket that drops, and a start the
// gateway fails half-way (injected into the real local backend: the agent starts, then the start throws). The page
// must say so, retry with back-off, and land in one live session (the lost start's own), with a working shell.
import { chromium, type Browser, type Page, type Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, login, startTestGateway } from '../testing/test-gateway.ts';

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

describe('terminal page: failed start and attach (Chromium)', () => {
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let browser: Browser;
  let page: Page;
  let admin: string;
  const problems: string[] = [];

  beforeAll(async () => {
    gateway = await startTestGateway(await createTestDatabase('terminal_start_failure'));
    admin = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1000, height: 600 } });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  });

  afterAll(async () => {
    await browser?.close();
    if (gateway) {
      for (const session of (await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie: admin })).json.data.sessions)
        await gateway.sessions.stop(session.id);
      await gateway.close();
    }
  });

  const sessions = async (includeEnded = true) =>
    (await api(gateway.url, 'GET', `/api/terminal/sessions?include_ended=${includeEnded}`, { cookie: admin })).json.data.sessions as {
      id: string;
      state: string;
    }[];
  const status = () => page.locator('#status');
  const lines = async () => (await page.locator('.xterm-rows').innerText()).split('\n').map((line) => line.trim());

  it('a start whose answer is lost: the page says so, retries, and reattaches to the one session it created', async () => {
    const starts: string[] = [];
    let messageSeen!: () => void;
    const checked = new Promise<void>((resolve) => (messageSeen = resolve));
    let atRetry: { id: string; state: string }[] = [];
    await page.route('**/api/terminal/start', async (route: Route) => {
      starts.push(route.request().postData() ?? '');
      if (starts.length === 1) {
        // The gateway gets the request and answers; the browser sees the connection reset instead.
        const answer = await route.fetch();
        expect(answer.status()).toBe(200);
        return route.abort('connectionreset');
      }
      // The retry waits until the test has read the message the failure left.
      await checked;
      atRetry = await sessions();
      return route.continue();
    });

    await page.goto(gateway.url);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    await expect
      .poll(() => status().textContent(), { timeout: 20_000 })
      .toMatch(/^Could not start the terminal: could not reach the server \(.+\); retrying in 1 s…$/);
    await expect(status().getAttribute('class')).resolves.toContain('error');
    expect(await page.locator('#retry').isVisible()).toBe(true);
    messageSeen();

    await expect.poll(() => status().textContent(), { timeout: 30_000 }).toBe('Reattached');
    // The retry sent the same terminal_cookie, found the session the lost start had created, and made no other.
    expect(starts).toHaveLength(2);
    expect(starts[1]).toBe(starts[0]);
    expect(atRetry).toEqual([expect.objectContaining({ state: 'running' })]);
    expect(await sessions()).toEqual([expect.objectContaining({ id: atRetry[0]!.id, state: 'running' })]);
    expect(await page.locator('#retry').isVisible()).toBe(false);

    await page.locator('.xterm').click();
    await page.keyboard.type('echo $((6*7))');
    await page.keyboard.press('Enter');
    await expect.poll(lines, { timeout: 20_000 }).toContain('42');
    await page.unroute('**/api/terminal/start');
  });

  it('a socket that drops: the page says so, reattaches to the same shell, and "Try again" skips the wait', async () => {
    const [session] = await sessions(false);
    // The gateway side of the page's socket ends abruptly (as a proxy restart or a lost network would).
    let refuse = true;
    await page.routeWebSocket('**/ws/terminal/**', (ws) => {
      if (refuse) return ws.close({ code: 1011, reason: 'proxy gone' });
      ws.connectToServer();
    });
    // Force a reconnect through the routed socket: the page's "Try again" is the visible way in.
    await page.evaluate('document.getElementById("retry").click()');
    await expect.poll(() => status().textContent(), { timeout: 20_000 }).toMatch(/^(Connection lost|Could not attach to the session); retrying in \d+ s…$/);
    refuse = false;
    await page.locator('#retry').click();
    await expect.poll(() => status().textContent(), { timeout: 30_000 }).toBe('Reattached');
    await page.locator('.xterm').click();
    await page.keyboard.type('echo $((7*8))');
    await page.keyboard.press('Enter');
    await expect.poll(lines, { timeout: 20_000 }).toContain('56');
    expect(await sessions()).toEqual([expect.objectContaining({ id: session!.id, state: 'running' })]);
  });

  it('a start the gateway fails (injected: the agent dies as it starts): the reason is said, the retry starts a shell', async () => {
    const before = await sessions();
    const realStart = gateway.backend.start.bind(gateway.backend);
    let failures = 1;
    gateway.backend.start = async (spec, onResource) => {
      const agent = await realStart(spec, onResource);
      if (failures-- > 0) throw new Error('the agent went away while starting');
      return agent;
    };
    try {
      // Another tab, signed in as the first (its cookie): its own terminal_cookie, so its own session.
      const context = await browser.newContext();
      await context.addCookies(await page.context().cookies());
      const tab = await context.newPage();
      tab.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await tab.goto(gateway.url);
      await expect
        .poll(() => tab.locator('#status').textContent(), { timeout: 20_000 })
        .toMatch(/^Could not start the terminal: the agent went away while starting; retrying in 1 s…$/);
      await expect.poll(() => tab.locator('#status').textContent(), { timeout: 30_000 }).toBe('Connected');
      await tab.locator('.xterm').click();
      await tab.keyboard.type('echo $((8*9))');
      await tab.keyboard.press('Enter');
      await expect.poll(async () => (await tab.locator('.xterm-rows').innerText()).split('\n').map((line) => line.trim()), { timeout: 20_000 }).toContain('72');
      await context.close();
    } finally {
      gateway.backend.start = realStart;
    }
    // The failed start left a failed row and no agent; the retry made one new live session beside the first tab's.
    const after = (await sessions()).filter((s) => !before.some((b) => b.id === s.id));
    expect(after.map((s) => s.state).sort()).toEqual(['failed', 'running']);
    expect(problems).toEqual([]);
  });
});
