// Real clients through share links (s3 driver): `wget --mirror` of a shared folder through its password-protected
// link mirrors exactly that folder (tree and sha256s, nothing from beside or above it), `wget --user x --password`
// fetches a shared file, and the folder's zip streams and `unzip` gives the same files.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminAuth, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const run = promisify(execFile);

let test: TestShare;
let work: string;
let source: string;

/** The shared folder: awkward names, an empty file, depth, a larger binary. */
const files: Record<string, Buffer> = {
  'README.txt': Buffer.from('shared top level\n'),
  'empty.dat': Buffer.alloc(0),
  'binary.bin': randomBytes(2 * 1024 * 1024 + 5),
  'docs/guide with spaces.md': Buffer.from('# Guide\n'),
  'docs/100% done+more.txt': Buffer.from('percent and plus\n'),
  'docs/naïve café/résumé.txt': Buffer.from('unicode\n'),
  'deep/a/b/c/leaf.txt': Buffer.from('deep leaf\n'),
};
/** Beside and above the shared folder: must never be fetched through the link. */
const outside: Record<string, string> = {
  '/outside.txt': 'above',
  '/projects/other/private.txt': 'beside',
  '/projects/shared2/lookalike.txt': 'prefix sibling',
};

async function walk(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = relative(dir, join(entry.parentPath, entry.name));
    out.set(
      path,
      createHash('sha256')
        .update(await readFile(join(dir, path)))
        .digest('hex'),
    );
  }
  return out;
}

const sorted = (map: Map<string, string>) => Object.fromEntries([...map].sort());

beforeAll(async () => {
  test = await startTestShare({ storage: 's3' });
  work = await mkdtemp(join(tmpdir(), 'fs-share-clients-'));
  source = join(work, 'source');
  for (const [path, data] of Object.entries(files)) {
    await mkdir(join(source, path, '..'), { recursive: true });
    await writeFile(join(source, path), data);
    expect((await upload(test.url, `/projects/shared/${path.split('/').map(encodeURIComponent).join('/')}`, data, adminAuth)).status).toBe(201);
  }
  for (const [path, content] of Object.entries(outside)) expect((await upload(test.url, path, content, adminAuth)).status).toBe(201);
  expect((await postJson(test.url, '/projects/shared/folders', { folderName: 'empty folder' }, adminAuth)).status).toBe(201);
});
afterAll(() => test?.close());

async function link(body: Record<string, unknown>): Promise<{ id: string; url: string }> {
  const response = await postJson(test.url, '/api/shares', body, adminAuth);
  expect(response.status).toBe(201);
  return ((await response.json()) as { data: { share: { id: string; url: string } } }).data.share;
}

it('wget --mirror through a password-protected link mirrors exactly the shared folder', async () => {
  const shared = await link({ path: '/projects/shared', password: 'mirror-pass-1' });
  const dest = join(work, 'wget');
  const cutDirs = String(new URL(shared.url).pathname.split('/').filter(Boolean).length);
  await run(
    'wget',
    [
      '--mirror',
      '--no-parent',
      '--no-host-directories',
      `--cut-dirs=${cutDirs}`,
      '-e',
      'robots=off',
      '--quiet',
      '--restrict-file-names=nocontrol',
      '--user',
      'x',
      '--password',
      'mirror-pass-1',
      '-P',
      dest,
      shared.url,
    ],
    { timeout: 120_000 },
  );
  const mirrored = await walk(dest);
  for (const path of [...mirrored.keys()]) if (/(^|\/)index\.html/.test(path)) mirrored.delete(path);
  expect(sorted(mirrored)).toEqual(sorted(await walk(source)));
  expect((await readdir(dest, { recursive: true })).filter((p) => p.endsWith('index.html'))).toContain(join('empty folder', 'index.html'));
  // Nothing from above or beside the shared folder, and no zip.
  const everything = (await readdir(dest, { recursive: true })).join('\n');
  for (const name of ['outside.txt', 'private.txt', 'lookalike.txt', '.zip']) expect(everything).not.toContain(name);
});

it('wget --user x --password fetches a shared file under its own name', async () => {
  const shared = await link({ path: '/projects/shared/binary.bin', password: 'file-pass-22' });
  const dest = join(work, 'single');
  await mkdir(dest);
  await run('wget', ['--quiet', '--user', 'x', '--password', 'file-pass-22', '-P', dest, shared.url], { timeout: 60_000 });
  expect(sorted(await walk(dest))).toEqual({ 'binary.bin': createHash('sha256').update(files['binary.bin']!).digest('hex') });
});

it('streams a folder as .zip that unzip unpacks to the same files', async () => {
  const shared = await link({ path: '/projects/shared', password: 'zip-pass-333' });
  const token = new URL(shared.url).pathname.split('/')[3]!;
  const archive = join(work, 'shared.zip');
  const { stdout: headers } = await run('curl', ['-sS', '-u', 'x:zip-pass-333', '-D', '-', '-o', archive, `${test.url}/-/zip/${token}/`], { encoding: 'utf8' });
  expect(headers).toMatch(/^HTTP\/1\.1 200/);
  expect(headers.toLowerCase()).toContain('content-type: application/zip');
  // Streamed: no Content-Length, chunked.
  expect(headers.toLowerCase()).toContain('transfer-encoding: chunked');
  const unpacked = join(work, 'unzipped');
  await run('unzip', ['-q', archive, '-d', unpacked]);
  expect(sorted(await walk(join(unpacked, 'shared')))).toEqual(sorted(await walk(source)));
  expect((await readdir(join(unpacked, 'shared'), { recursive: true })).includes('empty folder')).toBe(true);
  // A subfolder's zip holds that subfolder only; without the password nothing.
  const sub = join(work, 'docs.zip');
  await run('curl', ['-sS', '-f', '-u', 'x:zip-pass-333', '-o', sub, `${test.url}/-/zip/${token}/docs/`]);
  const { stdout: list } = await run('unzip', ['-Z1', sub], { encoding: 'utf8' });
  expect(list.split('\n').filter(Boolean).sort()).toEqual([
    'docs/',
    'docs/100% done+more.txt',
    'docs/guide with spaces.md',
    'docs/naïve café/',
    'docs/naïve café/résumé.txt',
  ]);
  const { stdout: refused } = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', `${test.url}/-/zip/${token}/`], { encoding: 'utf8' });
  expect(refused).toBe('401');
});
