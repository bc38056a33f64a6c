// The file share's web console in Debian's Chromium, against a real share (PostgreSQL, MinIO): sign in with the
// page's form, drag and drop several files and pick a whole folder (progress, SHA-256 shown), new folder, rename,
// delete with confirmation (by keyboard), copy a link, live updates seen by a second browser context without a
// reload, an API key created and copied in the page and then used by curl (and refused once revoked), sign-out;
// with JavaScript off, signing in, browsing and the plain upload form still work. Every page carries the strict
// CSP, and no page reports a CSP violation or a script error. Screenshots of each main page are saved under
// test-results/screenshots/file-console/.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, adminAuth, createUser, upload, type TestShare, startTestShare } from '../testing/test-share.ts';
import { CONSOLE_CSP } from './page-security.ts';

const run = promisify(execFile);
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
const SCREENSHOTS = join(process.cwd(), 'test-results', 'screenshots', 'file-console');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let test: TestShare;
let browser: Browser;
let alicePassword: string;
const problems: string[] = [];

/** A context whose pages report script errors, console errors and CSP violations into `problems`. */
async function newContext(label: string, options: Parameters<Browser['newContext']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 }, ...options });
  if (options.javaScriptEnabled !== false) {
    // (Strings, not functions: this file is compiled without the DOM's types.)
    await context.addInitScript(
      "document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`))",
    );
  }
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${label}: page error: ${error.message}`));
  page.on('console', (message) => {
    // The sign-in page answers 401 by design (the resource-load line Chromium logs for it is no problem).
    if (message.type() === 'error' && !message.text().includes('status of 401')) problems.push(`${label}: console: ${message.text()}`);
  });
  return { context, page };
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

async function signIn(page: Page, username: string, password: string) {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

const api = async (path: string, authorization = adminAuth) => fetch(`${test.url}${path}`, { headers: { authorization, accept: 'application/json' } });
const names = async (folder: string) => ((await (await api(`${folder}?format=json`)).json()) as { files: { name: string }[] }).files.map((f) => f.name);
const rowLinks = (page: Page) => page.locator('#entries td.name a').allInnerTexts();

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  test = await startTestShare({ storage: 's3' });
  alicePassword = (await createUser(test.url, 'alice', 'user')).password;
  expect((await upload(test.url, '/docs/readme.txt', 'read me\n', adminAuth)).status).toBe(201);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await test?.close();
});

describe('file share console (Chromium)', () => {
  let admin: Page;
  let adminContext: BrowserContext;
  let alice: Page;

  it('signs in from the "sign in required" page with the share\'s own session cookie', async () => {
    ({ page: admin, context: adminContext } = await newContext('admin'));
    const first = await admin.goto(`${test.url}/docs/`);
    expect(first?.status()).toBe(401);
    // The browser gets the page, not its Basic password prompt.
    expect(first?.headers()['www-authenticate']).not.toMatch(/Basic/);
    expect(first?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    await shot(admin, 'sign-in');
    await signIn(admin, 'admin', 'wrong password');
    await expect.poll(() => admin.getByRole('alert').innerText()).toBe('Invalid username or password.');
    await signIn(admin, 'admin', ADMIN_PASSWORD);
    // Back where the browser came from, signed in.
    await admin.waitForURL(`${test.url}/docs/`);
    await expect.poll(() => admin.locator('.bar').innerText()).toContain('Signed in as admin');
    const cookie = (await adminContext.cookies(test.url)).find((c) => c.name === 'auth_token');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
    expect(await admin.evaluate('document.cookie')).not.toContain('auth_token');
    expect(await rowLinks(admin)).toEqual(['../', 'readme.txt']);
  });

  it("uploads several files dropped on the page, with progress and the server's SHA-256 shown", async () => {
    ({ page: alice } = await newContext('alice'));
    await alice.goto(`${test.url}/docs/`);
    await signIn(alice, 'alice', alicePassword);
    await alice.waitForURL(`${test.url}/docs/`);
    // alice's page stays open from here on: anything she sees later came live, without a reload.
    await alice.evaluate('window.notReloaded = true');
    await alice.locator('body[data-live="on"]').waitFor();

    const files = [
      { name: 'alpha.txt', content: 'alpha\n' },
      { name: 'beta notes.md', content: '# beta\n' },
      { name: 'gamma.json', content: '{"gamma":true}\n' },
    ];
    const transfer = await admin.evaluateHandle(`(() => {
      const data = new DataTransfer();
      for (const file of ${JSON.stringify(files)}) data.items.add(new File([file.content], file.name, { type: 'text/plain' }));
      return data;
    })()`);
    // Each file goes as its own request, the File itself as the body (streamed by the browser, not read by the page).
    const sent: string[] = [];
    const watch = (request: Request) => {
      if (request.method() === 'POST') sent.push(`${request.headers()['content-type']} ${decodeURIComponent(new URL(request.url()).pathname)}`);
    };
    admin.on('request', watch);
    await admin.dispatchEvent('#drop-zone', 'dragover', { dataTransfer: transfer });
    await admin.dispatchEvent('#drop-zone', 'drop', { dataTransfer: transfer });
    await expect.poll(() => admin.locator('#uploads li[data-state="done"]').count(), { timeout: 20_000 }).toBe(3);
    for (const file of files) {
      const item = admin.locator('#uploads li', { hasText: file.name });
      expect(await item.locator('.result').innerText()).toBe(`Done · SHA-256 ${sha256(file.content)}`);
      expect(
        await item.locator('progress').evaluate((bar) => (bar as unknown as { value: number; max: number }).value === (bar as unknown as { max: number }).max),
      ).toBe(true);
    }
    admin.off('request', watch);
    expect(sent.sort()).toEqual(files.map((file) => `application/octet-stream /docs/${file.name}`));
    await expect.poll(() => rowLinks(admin)).toEqual(['../', 'alpha.txt', 'beta notes.md', 'gamma.json', 'readme.txt']);
    // The checksum column shows the stored file's SHA-256.
    expect(await admin.locator('#entries tr[data-name="beta notes.md"] td.sum').innerText()).toBe(sha256('# beta\n'));
    expect(await (await fetch(`${test.url}/docs/beta%20notes.md`, { headers: { authorization: adminAuth } })).text()).toBe('# beta\n');
    await shot(admin, 'listing-after-upload');

    // The second browser context saw the new files arrive.
    await expect.poll(() => rowLinks(alice), { timeout: 20_000 }).toEqual(['../', 'alpha.txt', 'beta notes.md', 'gamma.json', 'readme.txt']);
    expect(await alice.evaluate('window.notReloaded')).toBe(true);
  });

  it('uploads a whole folder from the folder picker, recreating its tree', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fs-console-'));
    await mkdir(join(dir, 'photos', '2026'), { recursive: true });
    await writeFile(join(dir, 'photos', 'cover.txt'), 'cover\n');
    await writeFile(join(dir, 'photos', '2026', 'trip.txt'), 'trip\n');
    await admin.locator('#pick-folder').setInputFiles(join(dir, 'photos'));
    await expect.poll(() => admin.locator('#uploads li[data-state="done"]').count(), { timeout: 20_000 }).toBe(5);
    await expect.poll(() => rowLinks(admin)).toContain('photos/');
    expect(await names('/docs/photos/')).toEqual(['2026', 'cover.txt']);
    expect(await (await fetch(`${test.url}/docs/photos/2026/trip.txt`, { headers: { authorization: adminAuth } })).text()).toBe('trip\n');
    await expect.poll(() => rowLinks(alice), { timeout: 20_000 }).toContain('photos/');
  });

  it('creates a folder and renames a file through the dialog; the other browser follows', async () => {
    await admin.getByRole('button', { name: 'New folder' }).click();
    await admin.getByLabel('Folder name').fill('reports');
    await admin.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => rowLinks(admin)).toContain('reports/');

    await admin.getByRole('button', { name: 'Rename alpha.txt' }).click();
    const dialog = admin.getByRole('dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    // The name is offered without its extension selected, ready to type over.
    expect(
      await admin.getByLabel('New name').evaluate((input) => {
        const field = input as unknown as { value: string; selectionStart: number; selectionEnd: number };
        return field.value.slice(field.selectionStart, field.selectionEnd);
      }),
    ).toBe('alpha');
    await shot(admin, 'rename-dialog');
    await admin.getByLabel('New name').fill('omega.txt');
    await admin.getByRole('button', { name: 'Rename', exact: true }).click();
    await expect.poll(() => rowLinks(admin)).toEqual(['../', 'photos/', 'reports/', 'beta notes.md', 'gamma.json', 'omega.txt', 'readme.txt']);
    expect(await names('/docs/')).toEqual(['photos', 'reports', 'beta notes.md', 'gamma.json', 'omega.txt', 'readme.txt']);
    await expect
      .poll(() => rowLinks(alice), { timeout: 20_000 })
      .toEqual(['../', 'photos/', 'reports/', 'beta notes.md', 'gamma.json', 'omega.txt', 'readme.txt']);
    // Only what alice may do: neither delete nor rename (renaming needs delete too), though she may upload.
    expect(await alice.getByRole('button', { name: 'Rename omega.txt' }).count()).toBe(0);
    expect(await alice.getByRole('button', { name: 'Delete omega.txt' }).count()).toBe(0);
    expect(await alice.getByRole('button', { name: 'Copy link to omega.txt' }).count()).toBe(1);
  });

  it('deletes only after confirmation, with the keyboard alone', async () => {
    await admin.getByRole('button', { name: 'Delete gamma.json' }).focus();
    await admin.keyboard.press('Enter');
    await expect.poll(() => admin.getByRole('dialog').innerText()).toContain('gamma.json will be deleted');
    // The safe choice has the focus; Escape cancels.
    expect(await admin.evaluate('document.activeElement?.textContent')).toBe('Cancel');
    await shot(admin, 'delete-dialog');
    await admin.keyboard.press('Escape');
    await expect.poll(() => admin.getByRole('dialog').isVisible()).toBe(false);
    expect(await names('/docs/')).toContain('gamma.json');

    await admin.getByRole('button', { name: 'Delete gamma.json' }).focus();
    await admin.keyboard.press('Enter');
    await expect.poll(() => admin.getByRole('dialog').isVisible()).toBe(true);
    await admin.keyboard.press('Tab');
    expect(await admin.evaluate('document.activeElement?.textContent')).toBe('Delete');
    await admin.keyboard.press('Enter');
    await expect.poll(() => rowLinks(admin)).not.toContain('gamma.json');
    expect((await api('/docs/gamma.json')).status).toBe(404);
    await expect.poll(() => rowLinks(alice), { timeout: 20_000 }).not.toContain('gamma.json');
    await expect.poll(() => admin.locator('#status').innerText()).toBe('Deleted gamma.json');
  });

  it("copies a file's link, which downloads the file", async () => {
    await adminContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: test.url });
    await admin.getByRole('button', { name: 'Copy link to beta notes.md' }).click();
    await expect.poll(() => admin.locator('#status').innerText()).toBe('Link copied to the clipboard');
    const link = await admin.evaluate<string>('navigator.clipboard.readText()');
    expect(link).toBe(`${test.url}/docs/beta%20notes.md`);
    const { stdout } = await run('curl', ['-sS', '--fail', '-u', `admin:${ADMIN_PASSWORD}`, link]);
    expect(stdout).toBe('# beta\n');
  });

  it('creates an API key in the page (shown once, copied) that works with curl, then revokes it', async () => {
    const { page, context } = await newContext('alice keys');
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: test.url });
    await page.goto(`${test.url}/docs/`);
    await signIn(page, 'alice', alicePassword);
    await page.waitForURL(`${test.url}/docs/`);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`${test.url}/-/keys`);
    // alice (role user) may only give keys the downloads permission: that is all the form offers.
    expect(await page.getByRole('checkbox').evaluateAll((boxes) => boxes.map((box) => (box as unknown as { value: string }).value))).toEqual(['downloads']);
    await shot(page, 'api-keys');
    await page.getByLabel('Name').fill('ci pipeline');
    await page.getByRole('button', { name: 'Create key' }).click();
    const tokenField = page.getByLabel('The new API key');
    await expect.poll(() => tokenField.inputValue()).toMatch(/^bfs_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    const token = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(token).toBe(await tokenField.inputValue());
    await expect.poll(() => page.locator('#keys tr[data-name="ci pipeline"]').count()).toBe(1);
    await shot(page, 'api-key-created');

    const { stdout } = await run('curl', ['-sS', '--fail', '-H', `Authorization: Bearer ${token}`, `${test.url}/docs/readme.txt`]);
    expect(stdout).toBe('read me\n');
    // A download-only key cannot upload.
    const refused = await run(
      'curl',
      [
        '-sS',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '-H',
        `Authorization: Bearer ${token}`,
        '-F',
        `file=@${import.meta.filename};filename=x.txt`,
        `${test.url}/docs/`,
      ],
      {},
    );
    expect(refused.stdout).toBe('403');

    await page.getByRole('button', { name: 'Revoke ci pipeline' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => page.locator('#keys tr[data-name="ci pipeline"]').count()).toBe(0);
    const revoked = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-H', `Authorization: Bearer ${token}`, `${test.url}/docs/readme.txt`]);
    expect(revoked.stdout).toBe('401');
    await context.close();
  });

  it('is readable on a phone: rows become cards, nothing wider than the screen', async () => {
    const { page, context } = await newContext('phone', {
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      storageState: await adminContext.storageState(),
    });
    await page.goto(`${test.url}/docs/`);
    await expect.poll(() => page.locator('#entries tr').count()).toBeGreaterThan(3);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    // The upload controls and every row's buttons are on the screen without zooming or scrolling sideways.
    for (const control of [
      page.getByText('Choose files'),
      page.getByRole('button', { name: 'Delete readme.txt' }),
      page.getByRole('button', { name: 'Copy link to readme.txt' }),
    ]) {
      const box = (await control.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }
    await shot(page, 'listing-phone');
    await context.close();
  });

  it('signs out: the session ends and the page asks to sign in again', async () => {
    const session = (await adminContext.cookies(test.url)).find((c) => c.name === 'auth_token')!;
    await admin.getByRole('button', { name: 'Sign out' }).click();
    await admin.waitForURL(`${test.url}/`);
    await expect.poll(() => admin.locator('h1').innerText()).toBe('Sign in required');
    expect((await fetch(`${test.url}/docs/?format=json`, { headers: { cookie: `auth_token=${session.value}` } })).status).toBe(401);
  });

  it('works without JavaScript: sign in, browse by links, upload with the plain form', async () => {
    const { page } = await newContext('no-js', { javaScriptEnabled: false });
    await page.goto(`${test.url}/`);
    await signIn(page, 'alice', alicePassword);
    await page.waitForURL(`${test.url}/`);
    await page.getByRole('link', { name: 'docs/' }).click();
    await page.waitForURL(`${test.url}/docs/`);
    expect(await rowLinks(page)).toContain('readme.txt');
    // The script's controls stay hidden; the plain form is there.
    expect(await page.locator('#upload-panel').isVisible()).toBe(false);
    await page.getByLabel('Upload a file here:').setInputFiles({ name: 'plain.txt', mimeType: 'text/plain', buffer: Buffer.from('no script\n') });
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.waitForURL(`${test.url}/docs/`);
    expect(await rowLinks(page)).toContain('plain.txt');
    await shot(page, 'listing-no-js');
  });

  it('serves every page and asset with the strict CSP, and no page reported a violation or an error', async () => {
    const cookie = `auth_token=${((await (await fetch(`${test.url}/auth/login/basic`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) })).json()) as { data: { token: string } }).data.token}`;
    for (const path of ['/', '/docs/', '/-/keys', '/-/sign-in', '/-/assets/files.js', '/-/assets/console.css']) {
      const response = await fetch(`${test.url}${path}`, { headers: { cookie, accept: 'text/html' } });
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-security-policy'), path).toBe(CONSOLE_CSP);
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(problems).toEqual([]);
  });
});
