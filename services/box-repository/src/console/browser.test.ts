// The box console in Debian's Chromium (playwright-core): an anonymous visitor finds a box, copies its
// `vagrant box add` line, and that line run by the real Vagrant adds the box; an admin signs in, creates a box, a
// version, a provider and an architecture, uploads a 200 MiB box file through the page (streamed, with progress)
// and sees the server's sha256 match; releases and revokes; makes a service account and copies its key once; a
// non-member never sees a private box; the page is usable by keyboard and on a phone. No CSP violation or script
// error may appear, and each main page is saved as a screenshot (test-results/screenshots/box-console/).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished } from '@boxyard/test/harness/child-output.ts';
import { makeBox } from '../testing/boxes.ts';
import { ADMIN_PASSWORD, createBoxPath, createOrganization, startTestService, uploadRaw, USER_PASSWORD, type TestService } from '../testing/test-service.ts';
import { ignoreError } from '@boxyard/kit';

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
const SCREENSHOTS = join(process.cwd(), 'test-results', 'screenshots', 'box-console');
const VAGRANT = process.env.VAGRANT_BIN ?? '/usr/bin/vagrant';
const MiB = 1024 * 1024;
/** Waits for what the page shows: generous, since the machine may be busy with other suites (no timing asserted). */
const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 30_000, interval: 100 });

const fileSha256 = (path: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });

/** Runs a shell line as a user would paste it, with Vagrant's state in a temporary home. */
const runLine = (line: string, home: string) =>
  finished(
    spawn('/bin/sh', ['-c', line], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, VAGRANT_HOME: join(home, 'vagrant.d'), VAGRANT_CHECKPOINT_DISABLE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );

describe('box console in Chromium', { timeout: 240_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let work: string;
  const problems: string[] = [];

  async function newPage(options: { phone?: boolean } = {}): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({
      viewport: options.phone ? { width: 390, height: 844 } : { width: 1200, height: 900 },
      ...(options.phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    // Chromium reports CSP violations (and failed loads) as console errors.
    page.on('console', (message) => {
      if (message.type() === 'error' || /content security policy/i.test(message.text()))
        problems.push(`console: ${message.text()} (${message.location().url})`);
    });
    page.on('dialog', (dialog) => void dialog.accept());
    return { context, page };
  }

  /** Chromium logs a refused request (a 403 page, a refused upload) as a failed load: expected where a test causes one. */
  const allowLoadError = (status: number, url: string) => {
    const index = problems.findIndex(
      (p) => p.startsWith(`console: Failed to load resource: the server responded with a status of ${status} `) && p.includes(`(${url}`),
    );
    if (index >= 0) problems.splice(index, 1);
  };

  const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

  async function signIn(page: Page, username: string, password: string) {
    await page.goto(`${service.url}/`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.locator('.who').textContent()).toBe(username);
  }

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    work = await mkdtemp(join(tmpdir(), 'box-console-'));
    service = await startTestService();
    await createOrganization(service, 'acme', { description: 'Boxes of the Acme platform team' });
    const base = { org: 'acme', box: 'debian12', version: '12.5.0', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, service.adminToken, base, { isPublic: true, description: 'Debian 12 base box with guest additions' });
    expect((await uploadRaw(service, base, await makeBox(), { token: service.adminToken })).status).toBe(201);
    await createBoxPath(service, service.adminToken, { ...base, box: 'internal-tools' }, { isPublic: false, description: 'Private tooling box' });
    await service.createUser('outsider');
    await service.createUser('newcomer');
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("lets an anonymous visitor find a box and copy the line that Vagrant then runs, and the Vagrantfile's box_url works too", async () => {
    const { context, page } = await newPage();
    await page.goto(`${service.url}/`);
    await eventually(() => page.locator('h1').textContent()).toBe('Public boxes');
    expect(await page.locator('.cards').textContent()).not.toContain('internal-tools');
    await shot(page, 'home-anonymous');
    await page.getByRole('searchbox', { name: 'Search boxes' }).fill('debian');
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'acme/debian12' }).click();
    await eventually(() => page.locator('h1').textContent()).toBe('acme/debian12');
    await shot(page, 'box-anonymous');
    const line = `VAGRANT_SERVER_URL=${service.url} vagrant box add acme/debian12`;
    await page.locator('button[data-copy="add-line"]').click();
    await eventually(() => page.locator('button[data-copy="add-line"]').textContent()).toBe('Copied');
    const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;
    expect(copied).toBe(line);
    // Run exactly as pasted (VAGRANT_BIN only when the test is pointed at another vagrant).
    const added = await runLine(process.env.VAGRANT_BIN ? copied.replace(' vagrant ', ` ${VAGRANT} `) : copied, work);
    expect(added.code, added.output).toBe(0);
    expect(added.output).toContain("Successfully added box 'acme/debian12' (v12.5.0) for 'virtualbox'");
    // The Vagrantfile's box_url is the metadata Vagrant understands: adding from it gives the same box.
    const vagrantfile = (await page.locator('#vagrantfile').textContent())!;
    expect(vagrantfile).toContain('config.vm.box = "acme/debian12"');
    const boxUrl = /config\.vm\.box_url = "([^"]+)"/.exec(vagrantfile)![1]!;
    const fromUrl = await runLine(`${VAGRANT} box add --force '${boxUrl}'`, work);
    expect(fromUrl.code, fromUrl.output).toBe(0);
    expect(fromUrl.output).toContain("Successfully added box 'acme/debian12' (v12.5.0) for 'virtualbox'");
    await context.close();
  });

  it('signs in, creates a box, uploads a 200 MiB box file through the page and shows the matching sha256', async () => {
    const { context, page } = await newPage();
    await signIn(page, 'admin', ADMIN_PASSWORD);
    // The session cookie is HttpOnly (invisible to scripts) and SameSite=Strict.
    const cookie = (await context.cookies()).find((c) => c.name === 'box_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(await page.evaluate('document.cookie')).not.toContain('box_session');
    await shot(page, 'home-signed-in');
    // Admins create organizations from the home page and land on the new one.
    const newOrg = page.locator('form.api', { has: page.getByRole('button', { name: 'Create organization' }) });
    await newOrg.getByLabel('Name').fill('beta');
    await newOrg.getByLabel('Description').fill('Second team');
    await newOrg.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(`${service.url}/beta`);
    await eventually(() => page.locator('h1').textContent()).toContain('beta');
    await page.goto(`${service.url}/`);

    await page.getByRole('link', { name: 'acme', exact: true }).click();
    const newBox = page.locator('details', { has: page.locator('summary', { hasText: 'New box' }) });
    await newBox.locator('summary').click();
    await newBox.getByLabel('Name', { exact: true }).fill('big-box');
    await newBox.getByLabel('Description').fill('A box uploaded from the browser');
    await newBox.getByLabel(/Public: listed/).check();
    await newBox.getByRole('button', { name: 'Create box' }).click();
    await page.waitForURL(`${service.url}/acme/boxes/big-box`);

    await page.getByText('New version').click();
    await page.getByLabel('Version (1.2.3, 20241101.1, 2.0.0.rc1)').fill('1.0.0');
    await page.getByRole('button', { name: 'Create version' }).click();
    await eventually(() => page.locator('article.version h3').first().textContent()).toBe('v1.0.0');
    const manage = () => page.locator('details', { has: page.locator('summary', { hasText: 'Manage v1.0.0' }) });
    const openManage = async () => {
      if ((await manage().getAttribute('open')) === null) await manage().locator('summary').click();
    };
    await openManage();
    await manage().getByLabel('Provider').fill('virtualbox');
    await manage().getByRole('button', { name: 'Add provider' }).click();
    await eventually(() => page.locator('table.files').textContent()).toContain('virtualbox');
    await openManage();
    await manage().getByLabel('Architecture').fill('amd64');
    await manage().getByRole('button', { name: 'Add architecture' }).click();
    await eventually(() => page.locator('table.files').textContent()).toContain('amd64');

    // A file that is no box is refused, and the page says why (the server's problem details).
    await openManage();
    await manage()
      .getByLabel('Box file')
      .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a box\n') });
    await manage().getByRole('button', { name: 'Upload' }).click();
    await eventually(() => manage().locator('form.upload .error').textContent()).toMatch(/^Upload failed: Not a Vagrant box/);
    // Said once, and no progress left behind.
    expect((await manage().locator('form.upload .error').textContent())!.match(/Not a Vagrant box/g)).toHaveLength(1);
    expect(await manage().locator('form.upload .status').textContent()).toBe('');
    expect(await manage().locator('form.upload progress').isVisible()).toBe(false);
    allowLoadError(
      422,
      `${service.url}/api/organization/acme/box/big-box/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload?file_name=notes.txt`,
    );
    await shot(page, 'box-upload-refused');

    const boxPath = join(work, 'big.box');
    await writeFile(boxPath, await makeBox({ gzip: false, fillerBytes: 200 * MiB }));
    const expected = await fileSha256(boxPath);
    await openManage();
    await manage().getByLabel('Box file').setInputFiles(boxPath);
    const progress: number[] = [];
    const sampler = setInterval(
      () =>
        void page
          .locator('form.upload progress')
          .getAttribute('value')
          .then((v) => progress.push(Number(v)))
          .catch(ignoreError('the page may navigate between samples')),
      50,
    );
    const started = performance.now();
    await manage().getByRole('button', { name: 'Upload' }).click();
    await expect
      .poll(() => page.locator('form.upload code.sha256').textContent().catch(ignoreError('not there yet: polled again')), { timeout: 180_000, interval: 250 })
      .toBe(expected);
    clearInterval(sampler);
    // A figure for the report, not an assertion: Chromium -> service -> local storage, with the sha256 computed.
    console.log(`[box console] 200 MiB upload through the page: ${(200 / ((performance.now() - started) / 1000)).toFixed(0)} MiB/s`);
    // The bar moved through values between empty and full while the bytes went out.
    expect(progress.some((value) => value > 0 && value < 100)).toBe(true);
    await shot(page, 'box-upload-done');
    const stored = await service.request('GET', '/api/organization/acme/box/big-box/version/1.0.0/provider/virtualbox/architecture/amd64/file', {
      token: service.adminToken,
    });
    expect(stored.body.sha256).toBe(expected);
    expect(stored.body.size).toBeGreaterThan(200 * MiB);

    // After a reload the page lists the file with its size and sha256.
    await page.reload();
    expect(await page.locator('table.files').textContent()).toContain(expected);
    await shot(page, 'box-manager');
    await context.close();
  });

  it('releases and revokes a version, and makes a service account whose key is shown once', async () => {
    const { context, page } = await newPage();
    await signIn(page, 'admin', ADMIN_PASSWORD);
    await page.goto(`${service.url}/acme/boxes/debian12`);
    const manage = page.locator('details', { has: page.locator('summary', { hasText: 'Manage v12.5.0' }) });
    await manage.locator('summary').click();
    await manage.getByRole('button', { name: 'Revoke' }).click();
    await eventually(() => page.locator('article.version .badge').first().textContent()).toBe('revoked');
    expect((await service.request('GET', '/acme/debian12')).body.versions).toEqual([]);
    await page
      .locator('details', { has: page.locator('summary', { hasText: 'Manage v12.5.0' }) })
      .locator('summary')
      .click();
    await page.getByRole('button', { name: 'Release' }).click();
    await eventually(() => page.locator('article.version .badge').first().textContent()).toBe('active');
    expect((await service.request('GET', '/acme/debian12')).body.versions[0].version).toBe('12.5.0');

    await page.goto(`${service.url}/acme`);
    const newAccount = page.locator('details', { has: page.locator('summary', { hasText: 'New service account' }) });
    await newAccount.locator('summary').click();
    await newAccount.getByLabel('Description').fill('CI pipeline');
    await newAccount.getByRole('button', { name: 'Create service account' }).click();
    const key = page.locator('#new-token');
    await eventually(() => key.textContent()).toMatch(/^bxy_sa_/);
    await page.locator('button[data-copy="new-token"]').click();
    const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;
    expect(copied).toBe(await key.textContent());
    expect((await service.request('GET', '/api/user', { headers: { authorization: `Bearer ${copied}` } })).body.roles).toEqual(['service_account']);
    await shot(page, 'organization-admin');
    // Shown once: a reload shows the account, never its key.
    await page.reload();
    expect(await page.content()).not.toContain(copied);
    expect(await page.locator('#service-accounts + p + table').textContent()).toContain('CI pipeline');
    // Members: add one with a role, see them listed, remove them again.
    const addMember = page.locator('details', { has: page.locator('summary', { hasText: 'Add a member' }) });
    await addMember.locator('summary').click();
    await addMember.getByLabel('Username').fill('newcomer');
    await addMember.getByLabel('Role').selectOption('moderator');
    await addMember.getByRole('button', { name: 'Save member' }).click();
    const members = page.locator('#members + table');
    await eventually(() => members.textContent()).toContain('newcomer');
    expect(await members.locator('tr', { hasText: 'newcomer' }).textContent()).toContain('moderator');
    await members.locator('tr', { hasText: 'newcomer' }).getByRole('button', { name: 'Remove' }).click();
    await eventually(() => members.textContent()).not.toContain('newcomer');

    // Webhooks: subscribe a URL to one event; the secret is shown once; the list shows it after a reload.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill('https://hooks.example.invalid/ci');
    await page.getByLabel('user.created').uncheck();
    await page.getByLabel('box.deleted').uncheck();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await eventually(() => page.locator('#new-secret').textContent()).not.toBe('');
    const hooks = await service.request('GET', '/api/admin/webhooks', { token: service.adminToken });
    expect(hooks.body).toMatchObject([{ url: 'https://hooks.example.invalid/ci', events: ['box.uploaded'] }]);
    await shot(page, 'webhooks');
    await page.reload();
    expect(await page.locator('main').textContent()).toContain('https://hooks.example.invalid/ci');

    await page.goto(`${service.url}/console/users`);
    expect(await page.locator('table').textContent()).toContain('outsider');
    await shot(page, 'users');
    await context.close();
  });

  it('never shows a private box to a non-member', async () => {
    const { context, page } = await newPage();
    await signIn(page, 'outsider', USER_PASSWORD);
    expect(await page.locator('main').textContent()).not.toContain('internal-tools');
    await page.goto(`${service.url}/acme`);
    expect(await page.locator('main').textContent()).not.toContain('internal-tools');
    const refused = await page.goto(`${service.url}/acme/boxes/internal-tools`);
    // Answered as if it did not exist (existence hidden): a non-member learns nothing about private names.
    expect(refused?.status()).toBe(404);
    // Chromium logs the refused document itself as a failed load: expected here, and nothing else.
    allowLoadError(404, `${service.url}/acme/boxes/internal-tools)`);
    expect(await page.locator('main').textContent()).not.toContain('Private tooling box');
    await shot(page, 'private-box-refused');
    // Signing out ends the session: the header offers sign-in again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await eventually(() => page.getByRole('link', { name: 'Sign in' }).isVisible()).toBe(true);
    expect((await context.cookies()).find((c) => c.name === 'box_session')).toBeUndefined();
    await context.close();
  });

  it('works by keyboard and fits a phone screen', async () => {
    const { context, page } = await newPage({ phone: true });
    await page.goto(`${service.url}/acme/boxes/debian12`);
    // The first Tab reaches the skip link, which moves focus past the header.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    // Copy buttons are real buttons: Enter on a focused one copies.
    await page.locator('button[data-copy="add-line"]').focus();
    await page.keyboard.press('Enter');
    await eventually(() => page.locator('button[data-copy="add-line"]').textContent()).toBe('Copied');
    // Nothing wider than the screen but the code blocks, which scroll by themselves.
    expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(390);
    await shot(page, 'box-phone');
    await page.goto(`${service.url}/`);
    expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(390);
    await shot(page, 'home-phone');
    await context.close();
  });

  it('is browsable with JavaScript off: the content is all there, only the copy buttons stay hidden', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${service.url}/`);
    await page.getByRole('searchbox', { name: 'Search boxes' }).fill('debian');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'acme/debian12' }).click();
    await page.waitForURL(`${service.url}/acme/boxes/debian12`);
    expect(await page.locator('#add-line').textContent()).toBe(`VAGRANT_SERVER_URL=${service.url} vagrant box add acme/debian12`);
    expect(await page.locator('table.files').textContent()).toContain('vagrant.box');
    expect(await page.locator('button[data-copy="add-line"]').isVisible()).toBe(false);
    await shot(page, 'box-no-javascript');
    await context.close();
  });

  it('had no CSP violation and no script error on any page', () => {
    expect(problems).toEqual([]);
  });
});
