// A file request's page in Debian's Chromium against a real share (PostgreSQL, MinIO): an outsider without an
// account opens a password-protected upload-only link (the form's cookie then also reaches the link's resumable
// endpoint), sends a 40 MiB file, which goes through tus in 8 MiB chunks (console/public/request.js with the
// console's own client, resumable.js); the connection is cut mid-way (playwright route abort of every PATCH from the
// third on), the page says it is retrying, and once the network is back the upload continues from the server's
// offset, not from zero, and lands with the right sha256. Listing and download through the link stay refused.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, postJson, startTestShare, type TestShare } from '../testing/test-share.ts';
import { cutTusNetwork } from '../testing/network-cut.ts';
import { randomFile } from '../testing/tus-clients.ts';

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
const MiB = 1024 * 1024;
const CHUNK = 8 * MiB; // resumable.js's chunk
const PASSWORD = 'drop files here 7';

let test: TestShare;
let browser: Browser;
let work: string;

beforeAll(async () => {
  test = await startTestShare({ storage: 's3', overrides: { uploads: { max_bytes: 64 * MiB } } });
  expect((await postJson(test.url, '/folders', { folderName: 'inbox' }, adminAuth)).status).toBe(201);
  work = await mkdtemp(join(tmpdir(), 'fs-request-page-'));
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await test?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe("a file request's page (Chromium)", () => {
  it("sends a file resumably: a cut connection is retried from the server's offset, the file lands with its sha256", { timeout: 120_000 }, async () => {
    const size = 40 * MiB;
    const file = join(work, 'photos.bin');
    const expected = await randomFile(file, size);
    const created = await postJson(test.url, '/api/shares', { path: '/inbox', kind: 'request', password: PASSWORD }, adminAuth);
    expect(created.status).toBe(201);
    const url = ((await created.json()) as { data: { share: { url: string } } }).data.share.url;
    const token = new URL(url).pathname.split('/')[3]!;

    const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
    await context.addInitScript(
      "document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`))",
    );
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // The password form answers 401 by design; aborted requests are the cut under test.
      if (message.type() === 'error' && !/status of 401|ERR_INTERNET_DISCONNECTED|net::ERR_FAILED/.test(message.text()))
        problems.push(`console: ${message.text()}`);
    });
    await page.goto(url);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByLabel('File').waitFor();

    // The network goes down after two chunks: every later PATCH is aborted.
    const network = await cutTusNetwork(context, `**/-/tus/${token}**`, 2 * CHUNK);
    await page.getByLabel('File').setInputFiles(file);
    await page.getByRole('button', { name: 'Send' }).click();
    const form = page.locator('#request-upload');
    await expect.poll(() => form.getAttribute('data-state'), { timeout: 60_000 }).toBe('retrying');
    expect(await page.locator('#status').innerText()).toMatch(/Connection lost/);
    expect(network.beforeCut).toEqual([0, CHUNK]);
    expect(await storedSha256('/inbox/photos.bin')).toBeNull(); // nothing visible yet

    // The network is back: the retry asks the server's offset and goes on from there.
    network.restore();
    await expect.poll(() => form.getAttribute('data-state'), { timeout: 90_000 }).toBe('done');
    expect(await page.locator('#status').innerText()).toBe(`Received: photos.bin. Thank you. SHA-256 ${expected}`);
    expect(network.afterCut[0]).toBe(2 * CHUNK); // from where the server stood, not from zero
    expect(network.creations).toBe(1); // one upload, created once
    expect(await storedSha256('/inbox/photos.bin')).toBe(expected);

    // Upload-only, with the link's cookie: the folder is neither listed nor downloadable.
    expect((await context.request.get(`${url}?format=json`)).status()).toBe(403);
    expect((await context.request.get(`${url}photos.bin`)).status()).toBe(403);
    expect([401, 403]).toContain((await context.request.get(`${test.url}/inbox/photos.bin`)).status()); // nor outside the link
    expect(await page.evaluate('localStorage.length')).toBe(0); // forgotten once done
    expect(problems, problems.join('\n')).toEqual([]);
    await context.close();
  });
});

const storedSha256 = (path: string) => test.share.pool.maybeOneFirst(sql.unsafe`select sha256 from entries where path = ${path}`);
