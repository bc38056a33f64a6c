// The traversal suite: raw requests (no client-side normalisation) with encoded, double-encoded, mixed-separator,
// NUL and over-long paths and names, on every route, against the local driver and the s3 driver. Canary files
// sit next to the local store root, inside it, and in other prefixes of the bucket; afterwards they are unchanged,
// no response carried their content, and nothing was written outside the share's own object keys.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, bucketKeys, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const CANARY = `canary-${randomBytes(8).toString('hex')}`;

interface RawResponse {
  status: number;
  body: string;
}

/** Sends the path exactly as written (fetch and curl would normalise `..` away). */
function raw(url: string, method: string, path: string, options: { body?: Buffer | string; headers?: Record<string, string> } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ hostname, port, method, path, headers: { authorization: adminAuth, ...options.headers } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('latin1') }));
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

function multipart(filename: string, content: string): { body: Buffer; headers: Record<string, string> } {
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    Buffer.from(content),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const json = (value: unknown) => ({ body: JSON.stringify(value), headers: { 'content-type': 'application/json' } });

const long = (n: number) => 'n'.repeat(n);

/** Paths that must be refused with 400 wherever a path is accepted. */
const hostilePaths = [
  '/../canary.txt',
  '/../../../../etc/passwd',
  '/docs/../../canary.txt',
  '/./canary.txt',
  '/%2e%2e/canary.txt',
  '/%2E%2E/%2E%2E/canary.txt',
  '/%2e%2e%2fcanary.txt',
  '/docs/..%2f..%2fcanary.txt',
  '/%252e%252e/canary.txt',
  '/%252e%252e%252fcanary.txt',
  '/docs%252f..%252f..%252fcanary.txt',
  '/..%5ccanary.txt',
  '/..\\canary.txt',
  '/docs\\..\\..\\canary.txt',
  '/%5c%5cserver%5cshare',
  '/%c0%ae%c0%ae/canary.txt',
  '/canary.txt%00.png',
  '/docs/%00',
  '/a%0d%0aSet-Cookie:%20x=y',
  '//canary.txt',
  '/docs//canary.txt',
  `/${long(256)}`,
  `/${'%C3%A9'.repeat(128)}`,
  `/${Array.from({ length: 17 }, () => long(250)).join('/')}`,
];

/** Names (JSON bodies, multipart filenames) that must be refused. */
const hostileNames = ['..', '.', '../canary.txt', '..\\canary.txt', 'a/b', '%2e%2e', '%252e', 'nul\u0000byte', long(256), ''];

async function snapshotDir(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile()) {
      const info = await stat(path);
      out[path] = `${info.size}:${info.mtimeMs}:${(await readFile(path)).toString('base64').slice(0, 64)}`;
    } else out[path] = 'dir';
  }
  return out;
}

function attackEveryRoute(getTest: () => TestShare) {
  it.each(hostilePaths)('refuses %s on every route with 400 and never returns the canary', async (path) => {
    const { url } = getTest();
    const attempts: [string, string, { body?: Buffer | string; headers?: Record<string, string> }?][] = [
      ['GET', path],
      ['HEAD', path],
      ['GET', `${path}/`],
      ['POST', path, multipart('x.txt', 'attack')],
      ['POST', `${path}/`, multipart('x.txt', 'attack')],
      ['POST', `${path}/folders`, json({ folderName: 'x' })],
      ['POST', `${path}/search`, json({ query: 'canary' })],
      ['PUT', `${path}?action=rename`, json({ newName: 'x' })],
      ['DELETE', path],
    ];
    for (const [method, target, options] of attempts) {
      const response = await raw(url, method, target, options);
      expect(response.body).not.toContain(CANARY);
      // Node's parser refuses some raw bytes itself (400 without our envelope); everything else is our 400.
      expect({ method, target, status: response.status }).toEqual({ method, target, status: 400 });
      if (method !== 'HEAD' && response.body.startsWith('{')) expect(JSON.parse(response.body)).toMatchObject({ success: false });
    }
  });

  it.each(hostileNames)('refuses the name %j in folderName, newName and upload filenames', async (name) => {
    const { url } = getTest();
    const attempts: [string, string, { body?: Buffer | string; headers?: Record<string, string> }][] = [
      ['POST', '/safe/folders', json({ folderName: name })],
      ['PUT', '/safe/inside.txt?action=rename', json({ newName: name })],
      ['POST', '/safe/', multipart(name.replaceAll('"', ''), 'attack')],
    ];
    for (const [method, target, options] of attempts) {
      const response = await raw(url, method, target, options);
      expect({ method, target, status: response.status }).toEqual({ method, target, status: 400 });
    }
  });

  it('never maps share paths onto storage keys', async () => {
    const { url } = getTest();
    for (const path of ['/canary.txt', '/objects/canary.txt', '/files/canary.txt', '/other-service/secret.txt', '/secret.txt', '/file-share/secret.txt']) {
      const response = await raw(url, 'GET', path);
      expect(response.status).toBe(404);
      expect(response.body).not.toContain(CANARY);
    }
    // The search compares names only: the canary's name or content is never found.
    const search = await raw(url, 'POST', '/search', json({ query: 'canary' }));
    expect(JSON.parse(search.body)).toMatchObject({ data: { total: 0 } });
  });
}

describe('local driver', () => {
  let test: TestShare;
  let outside: Record<string, string>;
  let base: string;
  beforeAll(async () => {
    test = await startTestShare({ storage: 'local' });
    const root = test.localRoot!;
    base = dirname(root);
    // Next to the store root, inside it (where objects live), and in the temp directory's parent.
    await writeFile(join(base, 'canary.txt'), CANARY);
    await mkdir(join(root, 'objects'), { recursive: true });
    await writeFile(join(root, 'objects', 'canary.txt'), CANARY);
    await writeFile(join(root, 'canary.txt'), CANARY);
    expect((await upload(test.url, '/safe/inside.txt', 'inside', adminAuth)).status).toBe(201);
    outside = await snapshotDir(base);
  });
  afterAll(() => test?.close());

  attackEveryRoute(() => test);

  it('left everything outside the share untouched', async () => {
    const after = await snapshotDir(base);
    // The only changes allowed are the share's own opaque objects (and the store's temp directory).
    const changed = Object.keys({ ...outside, ...after }).filter((path) => outside[path] !== after[path]);
    expect(changed.filter((path) => !path.startsWith(join(test.localRoot!, 'objects', 'files')) && !path.startsWith(join(test.localRoot!, '.tmp')))).toEqual(
      [],
    );
    expect(await readFile(join(base, 'canary.txt'), 'utf8')).toBe(CANARY);
  });
});

describe('s3 driver', () => {
  let test: TestShare;
  let before: string[];
  beforeAll(async () => {
    test = await startTestShare({ storage: 's3' });
    const { client, bucket } = test.bucket!;
    for (const key of ['secret.txt', 'other-service/secret.txt', 'file-share/secret.txt', 'file-share/canary.txt']) {
      await client.putObject(bucket, key, Buffer.from(CANARY));
    }
    expect((await upload(test.url, '/safe/inside.txt', 'inside', adminAuth)).status).toBe(201);
    before = await bucketKeys(test, '');
  });
  afterAll(() => test?.close());

  attackEveryRoute(() => test);

  it('wrote nothing outside the share prefix and left the canaries alone', async () => {
    const after = await bucketKeys(test, '');
    expect(after.filter((key) => !key.startsWith('file-share/files/'))).toEqual(before.filter((key) => !key.startsWith('file-share/files/')));
    expect(after).toEqual(before);
    const { client, bucket } = test.bucket!;
    for (const key of ['secret.txt', 'other-service/secret.txt', 'file-share/secret.txt']) {
      const stream = await client.getObject(bucket, key);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe(CANARY);
    }
  });
});
