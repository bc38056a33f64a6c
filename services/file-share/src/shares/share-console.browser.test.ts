// The console's share dialog in Debian's Chromium against a real share (PostgreSQL, MinIO): a signed-in user makes
// a password-protected share link for a folder from the listing; the link works for curl (`-u x:PASS`) and, in a
// fresh browser without an account, through the password form (a signed HttpOnly cookie scoped to the link), which
// lists the folder and downloads a file. A file request made the same way takes an upload from the outsider's page,
// and the owner's share links page shows it arrived; revoking there ends the link. No CSP violation, no script error.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminAuth, ADMIN_PASSWORD, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

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

let test: TestShare;
let browser: Browser;
const problems: string[] = [];

async function newPage(label: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  await context.addInitScript(
    "document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`))",
  );
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${label}: page error: ${error.message}`));
  page.on('console', (message) => {
    // The password form and sign-in page answer 401 by design.
    if (message.type() === 'error' && !message.text().includes('status of 401')) problems.push(`${label}: console: ${message.text()}`);
  });
  return page;
}

beforeAll(async () => {
  test = await startTestShare({ storage: 's3' });
  for (const [path, content] of Object.entries({
    '/projects/plans/roadmap.txt': 'the roadmap\n',
    '/projects/plans/q3/budget.csv': 'a,b\n1,2\n',
    '/projects/secret.txt': 'not shared\n',
  })) {
    expect((await upload(test.url, path, content, adminAuth)).status).toBe(201);
  }
  await fetch(`${test.url}/projects/folders`, {
    method: 'POST',
    headers: { authorization: adminAuth, 'content-type': 'application/json' },
    body: JSON.stringify({ folderName: 'inbox' }),
  });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await test?.close();
});

async function signedInOwner(): Promise<Page> {
  const page = await newPage('owner');
  await page.goto(`${test.url}/projects/`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${test.url}/projects/`);
  return page;
}

async function createLink(page: Page, entry: string, fill: (page: Page) => Promise<void>): Promise<string> {
  await page.getByRole('button', { name: `Share ${entry}` }).click();
  await fill(page);
  await page.getByRole('button', { name: 'Create link' }).click();
  await page.locator('#share-result:not([hidden])').waitFor();
  const url = await page.locator('#share-url').inputValue();
  await page.getByRole('button', { name: 'Close' }).click();
  return url;
}

it('makes a password-protected folder link that works for curl and, through the form, for a browser', async () => {
  const owner = await signedInOwner();
  const url = await createLink(owner, 'plans', async (page) => {
    await page.getByLabel('Password (optional)').fill('open sesame 42');
    await page.getByLabel('Expires in (days)').fill('2');
  });
  expect(url).toMatch(new RegExp(`^${test.url}/-/s/[A-Za-z0-9_-]{22}/$`));

  const { stdout } = await run('curl', ['-sS', '-f', '-u', 'x:open sesame 42', `${url}roadmap.txt`], { encoding: 'utf8' });
  expect(stdout).toBe('the roadmap\n');

  const outsider = await newPage('outsider');
  const first = await outsider.goto(url);
  expect(first?.status()).toBe(401);
  expect(first?.headers()['www-authenticate']).toBeUndefined();
  await outsider.getByLabel('Password').fill('wrong password');
  await outsider.getByRole('button', { name: 'Open' }).click();
  await expect.poll(() => outsider.getByRole('alert').innerText()).toBe('Wrong password.');
  await outsider.getByLabel('Password').fill('open sesame 42');
  await outsider.getByRole('button', { name: 'Open' }).click();
  await outsider.waitForURL(url);
  expect(await outsider.locator('#entries td.name a').allInnerTexts()).toEqual(['q3/', 'roadmap.txt']);
  const cookie = (await outsider.context().cookies(url)).find((c) => c.name.startsWith('share-'));
  expect(cookie).toMatchObject({ httpOnly: true, path: new URL(url).pathname });
  // Into a subfolder and back; nothing above the shared folder is linked.
  await outsider.getByRole('link', { name: 'q3/' }).click();
  expect(await outsider.locator('#entries td.name a').allInnerTexts()).toEqual(['../', 'budget.csv']);
  expect(await outsider.content()).not.toContain('secret.txt');
  const download = outsider.waitForEvent('download');
  await outsider.goto(`${url}q3/`);
  await outsider.locator('#zip').click();
  expect((await download).suggestedFilename()).toBe('q3.zip');
});

it("makes a file request the outsider fills from its page, shown on the owner's share links page, then revoked", async () => {
  const owner = await signedInOwner();
  const url = await createLink(owner, 'inbox', async (page) => {
    await page.getByLabel('File request: others can upload, not look inside').check();
  });
  const outsider = await newPage('uploader');
  await outsider.goto(url);
  await outsider.getByLabel('File').setInputFiles({ name: 'invoice.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4 invoice') });
  await outsider.getByRole('button', { name: 'Send' }).click();
  await expect.poll(() => outsider.getByRole('status').first().innerText()).toContain('Received: invoice.pdf');
  expect(await (await fetch(`${test.url}/projects/inbox/invoice.pdf`, { headers: { authorization: adminAuth } })).text()).toBe('%PDF-1.4 invoice');

  await owner.goto(`${test.url}/-/shares`);
  const row = owner.locator('#shares tr', { hasText: '/projects/inbox' });
  await row.locator('summary').click();
  expect(await row.innerText()).toContain('/projects/inbox/invoice.pdf');
  await row.getByRole('button', { name: 'Revoke the link to /projects/inbox' }).click();
  await owner.locator('#dialog-confirm').click();
  await expect.poll(() => owner.locator('#shares tr', { hasText: '/projects/inbox' }).getAttribute('data-state')).toBe('revoked');
  expect(problems, problems.join('\n')).toEqual([]);
  expect((await outsider.goto(url))?.status()).toBe(410);
});
