// `boxyard dev` heals itself (issue 16): its embedded PostgreSQL is killed in the middle of uploads to the box
// repository and the file share → both clients get 503 with Retry-After in the service's error shape, the
// supervisor starts PostgreSQL again, the services become ready by themselves, the same uploads retried succeed,
// and no row points at missing bytes nor any stored object lacks a row. Then the file share's storage directory
// turns read-only (a read-only bind mount): 503 again, and uploads work once it is writable again. Last, the whole
// of `boxyard dev` is stopped and started again on the same home (issue 12): every service's data is intact.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createLocalStore } from '@boxyard/kit/storage/local.ts';
import pg from 'pg';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api as terminalApi, createUser as createTerminalUser, login as terminalLogin } from '@boxyard/terminal/testing/test-gateway.ts';
import { startDevProcess, type DevProcess } from '../harness/dev-process.ts';

const run = promisify(execFile);
const ADMIN_PASSWORD = 'Supervised-Admin-Passw0rd';
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * POSTs `body` in two halves and runs `between` after the first: the kill lands while the upload is in flight.
 * The answer may come before the second half is sent (the server gave up early); it is what the client sees.
 */
function uploadInTwoHalves(url: string, headers: Record<string, string>, body: Buffer, between: () => Promise<void> = async () => {}): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const half = Math.floor(body.length / 2);
    req.write(body.subarray(0, half), () => {
      void between().then(
        () => {
          if (!req.destroyed) req.end(body.subarray(half));
        },
        (error: unknown) => reject(error as Error),
      );
    });
  });
}

async function makeBoxFile(diskBytes: number): Promise<Buffer> {
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (c: unknown) => chunks.push(c as Buffer));
  const ended = new Promise<void>((r) => archive.on('end', () => r()));
  archive.entry({ name: 'metadata.json' }, JSON.stringify({ provider: 'virtualbox' }));
  archive.entry({ name: 'Vagrantfile' }, 'Vagrant.configure("2") do |config|\nend\n');
  archive.entry({ name: 'box-disk.img' }, randomBytes(diskBytes));
  archive.finalize();
  await ended;
  return Buffer.concat(chunks);
}

function multipart(field: string, fileName: string, content: Buffer): { body: Buffer; contentType: string } {
  const boundary = `----boxyard${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  return { body: Buffer.concat([head, content, Buffer.from(`\r\n--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function waitUntilReady(urls: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const url of urls) {
    for (;;) {
      const status = await fetch(`${url}/health/ready`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      if (Date.now() > deadline) throw new Error(`${url} did not become ready again (last status ${status})`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** The second service's OpenAPI document (HTTPS with a self-signed certificate). */
function secondServiceOpenApi(base: string): Promise<{ status: number; document: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    httpsGet(`${base}/api-docs/json`, { rejectUnauthorized: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, document: JSON.parse(text) as Record<string, unknown> }));
    }).on('error', reject);
  });
}

const sha256Of = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url, { headers });
  return { status: response.status, sha256: sha256(Buffer.from(await response.arrayBuffer())) };
};

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text}`);
  return JSON.parse(text) as T;
}

describe('boxyard dev supervises its PostgreSQL and storage', () => {
  let dev: DevProcess;
  let boxes: string;
  let files: string;
  let token: string;
  const basic = `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`;
  const arch = '/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture/amd64';

  beforeAll(async () => {
    dev = await startDevProcess({ env: { BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    boxes = dev.urls['box-repository']!;
    files = dev.urls['file-share']!;
    const signin = await json<{ access_token: string }>(
      await fetch(`${boxes}/api/auth/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
      }),
    );
    token = signin.access_token;
    const post = (path: string, body: unknown) =>
      fetch(`${boxes}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-access-token': token }, body: JSON.stringify(body) }).then(
        json,
      );
    await post('/api/organization', { name: 'acme' });
    await post('/api/organization/acme/box', { name: 'base', is_public: true });
    await post('/api/organization/acme/box/base/version', { version_number: '1.0.0' });
    await post('/api/organization/acme/box/base/version/1.0.0/provider', { name: 'virtualbox' });
    await post('/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture', { name: 'amd64' });
  });

  afterAll(async () => {
    await dev?.stop({ discard: true });
  });

  it('answers 503 with Retry-After when PostgreSQL dies mid-upload, restarts it, and recovers by itself', async () => {
    const box = await makeBoxFile(24 << 20);
    const file = randomBytes(24 << 20);
    const form = multipart('file', 'disk.img', file);
    const boxHeaders = { 'content-type': 'application/octet-stream', 'x-file-name': 'base.box', 'x-access-token': token };
    const boxUrl = `${boxes}${arch}/file/upload?checksum=${sha256(box)}&checksum_type=sha256`;
    const fileHeaders = { 'content-type': form.contentType, authorization: basic };

    // Both uploads are half sent when the postmaster is killed; the rest follows at once, long before the
    // supervisor's first restart attempt (500 ms) has a server up again.
    let killed = false;
    const killOnce = async () => {
      if (!killed) {
        killed = true;
        process.kill(await dev.postgresPid(), 'SIGKILL');
      }
      await new Promise((r) => setTimeout(r, 100));
    };
    let halfway = 0;
    const bothHalfway = () =>
      new Promise<void>((resolve) => {
        halfway++;
        const wait = () => (halfway >= 2 ? void killOnce().then(resolve) : setTimeout(wait, 5));
        wait();
      });
    const [boxAnswer, fileAnswer] = await Promise.all([
      uploadInTwoHalves(boxUrl, boxHeaders, box, bothHalfway),
      uploadInTwoHalves(`${files}/disk.img`, fileHeaders, form.body, bothHalfway),
    ]);

    expect(boxAnswer.status, boxAnswer.text).toBe(503);
    expect(boxAnswer.headers['retry-after']).toMatch(/^\d+$/);
    expect(boxAnswer.headers['content-type']).toContain('application/problem+json');
    expect(JSON.parse(boxAnswer.text)).toMatchObject({
      type: 'https://boxyard.io/problems/unavailable',
      status: 503,
      detail: expect.stringMatching(/database/i),
    });
    expect(fileAnswer.status, fileAnswer.text).toBe(503);
    expect(fileAnswer.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(fileAnswer.text)).toMatchObject({ success: false, message: expect.stringMatching(/database/i) });
    // No address, path or stack reaches the caller.
    for (const text of [boxAnswer.text, fileAnswer.text]) expect(text).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|\/var\/|at .*\.ts/);

    // Nobody restarts anything: the supervisor brings PostgreSQL back and the services reconnect.
    await waitUntilReady([boxes, files, dev.urls.terminal!]);
    expect(dev.output()).toMatch(/PostgreSQL \(pid \d+\) exited/);
    await expect.poll(() => dev.output(), { timeout: 10_000 }).toMatch(/PostgreSQL restarted \(pid \d+\)/);

    // The same uploads, retried, succeed and serve the same bytes.
    const boxRetry = await uploadInTwoHalves(boxUrl, boxHeaders, box);
    expect(boxRetry.status, boxRetry.text).toBe(201);
    const fileRetry = await uploadInTwoHalves(`${files}/disk.img`, fileHeaders, form.body);
    expect(fileRetry.status, fileRetry.text).toBe(201);
    const boxBytes = Buffer.from(await (await fetch(`${boxes}/acme/boxes/base/versions/1.0.0/providers/virtualbox/amd64/base.box`)).arrayBuffer());
    expect(sha256(boxBytes)).toBe(sha256(box));
    const fileBytes = Buffer.from(await (await fetch(`${files}/disk.img`, { headers: { authorization: basic } })).arrayBuffer());
    expect(sha256(fileBytes)).toBe(sha256(file));

    // Every row's object exists, and every stored object has its row: nothing of the failed attempts is left
    // (an object whose commit outcome was unknown goes as soon as the database confirms it has no row).
    const db = new pg.Client({ connectionString: await dev.databaseUrl() });
    await db.connect();
    try {
      for (const [service, query] of [
        ['box-repository', 'select storage_key from box_repository.files'],
        ['file-share', 'select storage_key from file_share.entries where storage_key is not null'],
      ] as const) {
        const rows = (await db.query<{ storage_key: string }>(query)).rows.map((r) => r.storage_key);
        expect(rows, service).toHaveLength(1);
        const objects = async () => {
          const keys: string[] = [];
          for await (const object of createLocalStore({ root: join(dev.home, service) }).list('')) keys.push(object.key);
          return keys;
        };
        await expect.poll(objects, { timeout: 15_000, message: `${service}: stored objects = keys of rows` }).toEqual(rows);
      }
    } finally {
      await db.end();
    }
  });

  it('answers 503 while the storage directories are read-only and recovers when they are writable again', async () => {
    const roots = ['file-share', 'box-repository'].map((service) => join(dev.home, service));
    const form = multipart('file', 'later.txt', Buffer.from('written after the disk came back\n'));
    const uploadFile = () => uploadInTwoHalves(`${files}/later.txt`, { 'content-type': form.contentType, authorization: basic }, form.body);
    const box = await makeBoxFile(1 << 20);
    const uploadBox = () =>
      uploadInTwoHalves(
        `${boxes}${arch}/file/upload?replace=true`,
        { 'content-type': 'application/octet-stream', 'x-file-name': 'base.box', 'x-access-token': token },
        box,
      );
    // Read-only bind mounts: refused even to root, like a disk remounted read-only after an error.
    const mounted: string[] = [];
    try {
      for (const root of roots) {
        await run('mount', ['--bind', root, root]);
        mounted.push(root);
        await run('mount', ['-o', 'remount,bind,ro', root]);
      }
      const refusedFile = await uploadFile();
      expect(refusedFile.status, refusedFile.text).toBe(503);
      expect(refusedFile.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.parse(refusedFile.text)).toMatchObject({ success: false, message: expect.stringMatching(/storage/i) });
      const refusedBox = await uploadBox();
      expect(refusedBox.status, refusedBox.text).toBe(503);
      expect(refusedBox.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.parse(refusedBox.text)).toMatchObject({ type: 'https://boxyard.io/problems/unavailable', detail: expect.stringMatching(/storage/i) });
      for (const text of [refusedFile.text, refusedBox.text]) expect(text).not.toContain(dev.home);
      for (const url of [files, boxes]) {
        const ready = await fetch(`${url}/health/ready`);
        expect(ready.status).toBe(503);
        expect(await ready.json()).toMatchObject({ checks: { storage: 'failing', postgres: 'ok' } });
      }
    } finally {
      for (const root of mounted) await run('umount', [root]);
    }
    await waitUntilReady([files, boxes]);
    const stored = await uploadFile();
    expect(stored.status, stored.text).toBe(201);
    expect(await (await fetch(`${files}/later.txt`, { headers: { authorization: basic } })).text()).toBe('written after the disk came back\n');
    const replaced = await uploadBox();
    expect(replaced.status, replaced.text).toBe(200);
  });

  it("keeps every service's data, sessions and credentials across a restart", async () => {
    // Data written through each service: boxes and files come from the tests above; a terminal user and a
    // terminal session are written here.
    const terminal = dev.urls.terminal!;
    const adminCookie = await terminalLogin(terminal, 'admin', ADMIN_PASSWORD);
    const carol = await createTerminalUser(terminal, adminCookie, 'carol');
    const started = await terminalApi(terminal, 'POST', '/api/terminal/start', { cookie: adminCookie, body: { terminal_cookie: 'before-restart' } });
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    expect((await terminalApi(terminal, 'DELETE', `/api/terminal/sessions/${started.json.data.session.id}/stop`, { cookie: adminCookie })).status).toBe(200);

    /** What users see, read in an order that changes nothing (downloads count, so they come after the metadata). */
    const snapshot = async (urls: Record<string, string>, cookie: string) => {
      const [b, f, t] = [urls['box-repository']!, urls['file-share']!, urls.terminal!];
      const box = await fetch(`${b}/api/organization/acme/box/base`, { headers: { 'x-access-token': token } }).then((r) => r.json());
      const vagrantMetadata = await fetch(`${b}/acme/base`).then((r) => r.json());
      const fileEntries = await Promise.all(
        ['/disk.img', '/later.txt', '/'].map((p) => fetch(`${f}${p}?format=json`, { headers: { authorization: basic } }).then((r) => r.json())),
      );
      const users = (await terminalApi(t, 'GET', '/api/users', { cookie })).json;
      const sessions = (await terminalApi(t, 'GET', '/api/terminal/sessions?include_ended=true', { cookie })).json;
      const openapi = await secondServiceOpenApi(urls['second-service']!);
      const bytes = {
        box: await sha256Of(`${b}/acme/boxes/base/versions/1.0.0/providers/virtualbox/amd64/base.box`),
        disk: await sha256Of(`${f}/disk.img`, { authorization: basic }),
        later: await sha256Of(`${f}/later.txt`, { authorization: basic }),
      };
      return {
        box,
        vagrantMetadata,
        fileEntries,
        users,
        sessions,
        openapi: { status: openapi.status, info: openapi.document.info, paths: openapi.document.paths },
        bytes,
      };
    };
    const before = await snapshot(dev.urls, adminCookie);
    expect(before.bytes.box.status).toBe(200);
    expect(before.sessions.data.sessions).toHaveLength(1);

    const { home, postgresPort } = dev;
    const boxesBefore = boxes;
    await dev.stop();
    dev = await startDevProcess({ home, postgresPort, env: { BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    boxes = dev.urls['box-repository']!;
    files = dev.urls['file-share']!;

    // The same credentials still sign in everywhere, and a token issued before the restart is still honoured.
    const signin = await fetch(`${boxes}/api/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    });
    expect(signin.status).toBe(200);
    expect((await fetch(`${files}/api/users`, { headers: { authorization: basic } })).status).toBe(200);
    const cookieAfter = await terminalLogin(dev.urls.terminal!, 'admin', ADMIN_PASSWORD);
    await terminalLogin(dev.urls.terminal!, 'carol', carol.password);
    const after = await snapshot(dev.urls, cookieAfter);
    // Each start here takes free ports (`make run` keeps 3000...): download URLs name the new one; nothing else differs.
    expect(after).toEqual(JSON.parse(JSON.stringify(before).replaceAll(boxesBefore, boxes)));
  });
});
