// The recordings in the terminal page, in Debian's Chromium: a recorded session says so; the list replays it into
// the page's xterm.js with play and seek; search finds the session by a word typed in it and opens the replay at
// that moment (what came later is not on the screen yet). The page keeps its strict CSP (no WebAssembly).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
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
const lines = async (page: Page, selector: string) =>
  (await page.locator(`${selector} .xterm-rows`).innerText()).split('\n').map((line) => line.replace(/\u00a0/g, ' ').trim());

describe('recordings in the terminal page (Chromium)', () => {
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  let browser: Browser;
  let page: Page;
  let dir: string;
  const problems: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'recordings-browser-'));
    gateway = await startTestGateway(await createTestDatabase('terminal_recording_browser'), {
      recording: { mode: 'on', flush_seconds: 0.2 },
      storage: { driver: 'local', root: dir },
    });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
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
    rmSync(dir, { recursive: true, force: true });
  });

  it('tells the user the session is recorded, then records what is typed', async () => {
    await page.goto(gateway.url);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toMatch(/Connected|Reattached/);
    await expect.poll(async () => (await lines(page, '#terminal')).join('\n'), { timeout: 10_000 }).toContain('This session is recorded');
    await page.locator('#terminal .xterm').click();
    for (const command of ['echo $((6*7))', 'echo wombat$((1+2))', 'echo later$((2+2))']) {
      await page.keyboard.type(command);
      await page.keyboard.press('Enter');
      await page.waitForTimeout(700);
    }
    await expect.poll(() => lines(page, '#terminal'), { timeout: 20_000 }).toContain('later4');
    await page.waitForTimeout(500); // the last flush
  });

  it('replays the recording with play and seek', async () => {
    await page.getByRole('button', { name: 'Recordings' }).click();
    await page.getByRole('list', { name: 'Recordings' }).getByRole('button', { name: 'Replay' }).first().click();
    const seek = page.getByLabel('Seek');
    await expect.poll(async () => Number(await seek.getAttribute('max')), { timeout: 10_000 }).toBeGreaterThan(1);
    // At the start nothing was shown yet; at the end all three answers are.
    expect(await lines(page, '#player-screen')).not.toContain('42');
    await seek.fill((await seek.getAttribute('max')) as string);
    await expect.poll(() => lines(page, '#player-screen'), { timeout: 10_000 }).toEqual(expect.arrayContaining(['42', 'wombat3', 'later4']));
    await seek.fill('0');
    await expect.poll(() => lines(page, '#player-screen'), { timeout: 10_000 }).not.toContain('42');
    await page.getByLabel('Speed').selectOption('8');
    await page.getByLabel('Skip idle time').check();
    await page.getByRole('button', { name: 'Play', exact: true }).click();
    await expect.poll(() => lines(page, '#player-screen'), { timeout: 20_000 }).toContain('later4');
  });

  it('finds the session by a typed word and opens the replay at that moment', async () => {
    await page.getByLabel('Search recordings').fill('wombat3');
    await page.getByRole('button', { name: 'Search' }).click();
    await page
      .getByRole('list', { name: 'Search results' })
      .getByRole('button', { name: /^Open at/ })
      .click();
    // The screen as it was when wombat3 showed: the earlier answer, not the later one.
    const atThatMoment = async (p: Page) => {
      const screen = await lines(p, '#player-screen');
      return screen.includes('42') && screen.includes('wombat3') && !screen.includes('later4');
    };
    await expect.poll(() => atThatMoment(page), { timeout: 10_000 }).toBe(true);
    expect(page.url()).toMatch(/#replay=[0-9a-f-]{36}&t=[0-9.]+$/);
    // The same link opens the same moment in a new page.
    const other = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    await other.context().addCookies(await page.context().cookies());
    await other.goto(page.url());
    await expect.poll(() => atThatMoment(other), { timeout: 20_000 }).toBe(true);
    await other.close();
    expect(problems).toEqual([]);
  });
});
