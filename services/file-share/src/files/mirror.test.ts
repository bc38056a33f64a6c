// Real tools walking the HTML listing: `wget --mirror` and rclone's `http` remote must reproduce an uploaded
// nested tree byte for byte (s3 driver, on each of the run's S3 servers). wget authenticates with Basic from the URL userinfo, rclone with an
// API key header.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, s3Server, s3Servers, type S3ServerName } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, adminAuth, createKey, postJson, startTestShare, upload, type TestShare } from '../testing/test-share.ts';

const run = promisify(execFile);

let test: TestShare;
let work: string;
let source: string;

/** A tree with the names that trip tools up: spaces, Unicode, %, +, #, &, quotes, an empty file, depth. */
const files: Record<string, Buffer> = {
  'README.txt': Buffer.from('top level\n'),
  'empty.dat': Buffer.alloc(0),
  'binary.bin': randomBytes(3 * 1024 * 1024 + 17),
  'docs/guide with spaces.md': Buffer.from('# Guide\n'),
  'docs/100% done+more.txt': Buffer.from('percent and plus\n'),
  'docs/#hash & amp.txt': Buffer.from('hash and ampersand\n'),
  'docs/quote\'s "double".txt': Buffer.from('quotes\n'),
  'docs/naïve café/résumé.txt': Buffer.from('unicode folder and file\n'),
  'docs/日本語/ファイル.txt': Buffer.from('CJK\n'),
  'deep/a/b/c/d/e/leaf.txt': Buffer.from('deep leaf\n'),
  'deep/a/b/sibling.json': Buffer.from('{"ok":true}\n'),
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

/** A share on `server` holding `files` (and an empty folder) under /tree, and the same tree on disk. */
async function setUp(server: S3ServerName): Promise<void> {
  test = await startTestShare({ storage: 's3', bucket: await createTestBucket('fs', s3Server(server)) });
  work = await mkdtemp(join(tmpdir(), 'fs-mirror-'));
  source = join(work, 'source');
  for (const [path, data] of Object.entries(files)) {
    await mkdir(join(source, path, '..'), { recursive: true });
    await writeFile(join(source, path), data);
    const urlPath = `/tree/${path.split('/').map(encodeURIComponent).join('/')}`;
    const response = await upload(test.url, urlPath, data, adminAuth);
    expect(response.status).toBe(201);
  }
  await postJson(test.url, '/tree/folders', { folderName: 'empty folder' }, adminAuth);
}

describe.each(s3Servers)('mirroring the HTML listing ($server)', ({ server }) => {
  beforeAll(() => setUp(server));
  afterAll(() => test?.close());

  it('wget --mirror reproduces the tree byte for byte (Basic auth from the URL userinfo)', async () => {
    const dest = join(work, 'wget');
    const url = new URL(`${test.url}/tree/`);
    url.username = 'admin';
    url.password = ADMIN_PASSWORD;
    await run(
      'wget',
      [
        '--mirror',
        '--no-parent',
        '--no-host-directories',
        '--cut-dirs=1',
        '-e',
        'robots=off',
        '--quiet',
        '--restrict-file-names=nocontrol',
        '-P',
        dest,
        url.toString(),
      ],
      { timeout: 120_000 },
    );
    const mirrored = await walk(dest);
    // wget keeps each listing page as index.html; everything else must be exactly the source.
    for (const path of [...mirrored.keys()]) if (/(^|\/)index\.html/.test(path)) mirrored.delete(path);
    expect(Object.fromEntries([...mirrored].sort())).toEqual(Object.fromEntries([...(await walk(source))].sort()));
    const listingPages = (await readdir(dest, { recursive: true })).filter((p) => p.endsWith('index.html'));
    expect(listingPages).toContain(join('empty folder', 'index.html'));
  });

  it("rclone's http remote copies the tree byte for byte (API key header)", async () => {
    const { token } = await createKey(test.url, adminAuth, { name: 'rclone', permissions: ['downloads'] });
    const dest = join(work, 'rclone');
    const config = join(work, 'rclone.conf');
    await writeFile(config, '');
    await run('rclone', ['copy', '--config', config, '--http-url', `${test.url}/tree/`, '--http-headers', `Authorization,Bearer ${token}`, ':http:', dest], {
      timeout: 120_000,
    });
    expect(Object.fromEntries([...(await walk(dest))].sort())).toEqual(Object.fromEntries([...(await walk(source))].sort()));
    // rclone's own check: sizes and contents match the remote.
    await run(
      'rclone',
      ['check', '--config', config, '--download', '--http-url', `${test.url}/tree/`, '--http-headers', `Authorization,Bearer ${token}`, ':http:', dest],
      {
        timeout: 120_000,
      },
    );
  });
});
