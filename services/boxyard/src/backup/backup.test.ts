// `boxyard backup` and `boxyard restore` end to end, with real processes: `boxyard dev` with data made through
// the real APIs, a backup taken while uploads are still streaming in, a restore into a fresh home, and then the
// real clients against the restored installation (`vagrant box add`, `wget --mirror`, sign-in). Also: a corrupted
// backup and a non-empty target are refused, an object deleted right after the snapshot makes the backup take
// another one, and a restore with --config into another database and an S3 bucket.
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { makeBox } from '@boxyard/box-repository/testing/boxes.ts';
import { startDevProcess, type DevProcess } from '@boxyard/test/harness/dev-process.ts';
import { createTestBucket, createTestDatabase, type TestBucket } from '@boxyard/test/harness/fixtures.ts';
import { backup } from './backup.ts';
import { readManifest, type Manifest } from './manifest.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);
const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const ADMIN_PASSWORD = 'Admin-Passw0rd-For-Backups-1';
const ALICE_PASSWORD = 'Alice-Passw0rd-For-Backups-2';
const MiB = 1024 * 1024;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const adminBasic = basic('admin', ADMIN_PASSWORD);

/** The file share's tree before the backup: names that trip tools up, an empty file, depth, a bigger binary. */
const tree: Record<string, Buffer> = {
  'README.txt': Buffer.from('top level\n'),
  'empty.dat': Buffer.alloc(0),
  'binary.bin': randomBytes(MiB + 17),
  'docs/guide with spaces.md': Buffer.from('# Guide\n'),
  'docs/100% done+more.txt': Buffer.from('percent and plus\n'),
  'docs/naïve café/résumé.txt': Buffer.from('unicode\n'),
  'deep/a/b/c/leaf.txt': Buffer.from('deep leaf\n'),
};
/** Uploads still streaming while the backup runs: each ends at a different time, before or after the snapshot. */
const inFlight = Array.from({ length: 5 }, (_, i) => ({ path: `inflight/file-${i}.bin`, data: randomBytes(256 * 1024 + i), chunkDelayMs: 40 + i * 90 }));
/** Uploads whose last bytes arrive only once the backup has finished: certainly not in it. */
const held = { path: 'inflight/held.bin', data: randomBytes(300 * 1024) };

const devEnv = (home: string, port: number) => ({
  BOXYARD_HOME: home,
  BOXYARD_DEV_POSTGRES_PORT: String(port),
  BOXYARD_SERVER__PORT: '0',
  BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
  BOXYARD_LOGGING__LEVEL: 'warn',
  BOXYARD_RATE_LIMITING__ENABLED: 'false',
});

const running = new Set<DevProcess>();

async function startDev(home: string, port: number): Promise<DevProcess> {
  const dev = await startDevProcess({ home, postgresPort: port, env: devEnv(home, port) });
  running.add(dev);
  return dev;
}

async function boxyard(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

async function newHome(name: string): Promise<string> {
  const home = join(work, name);
  await mkdir(home);
  return home;
}

async function api(
  base: string,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; auth?: string } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (options.token) headers['x-access-token'] = options.token;
  if (options.auth) headers.authorization = options.auth;
  if (options.json !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, { method, headers, ...(options.json !== undefined ? { body: JSON.stringify(options.json) } : {}) });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body };
}

const encodePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');

/** A request body that trickles in (about parts x delay); with `hold`, its last part waits for that promise. */
function trickle(parts: Buffer[], chunkDelayMs: number, hold?: Promise<void>): ReadableStream<Uint8Array> {
  return ReadableStream.from(
    (async function* () {
      for (const [index, part] of parts.entries()) {
        await sleep(chunkDelayMs);
        if (hold && index === parts.length - 1) await hold;
        yield new Uint8Array(part);
      }
    })(),
  );
}

function chunked(data: Buffer, count: number): Buffer[] {
  const size = Math.ceil(data.length / count);
  return Array.from({ length: count }, (_, i) => data.subarray(i * size, (i + 1) * size));
}

async function uploadShareFile(base: string, path: string, data: Buffer, chunkDelayMs = 0, hold?: Promise<void>): Promise<number> {
  const boundary = `boxyard-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const response = await fetch(`${base}/data/${encodePath(path)}`, {
    method: 'POST',
    headers: { authorization: adminBasic, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: trickle([head, ...chunked(data, 8), tail], chunkDelayMs, hold),
    duplex: 'half',
  } as RequestInit);
  await response.text();
  return response.status;
}

const archPath = (box: string, arch: string) => `/api/organization/acme/box/${box}/version/1.0.0/provider/virtualbox/architecture/${arch}`;

async function createBox(base: string, token: string, box: string): Promise<void> {
  const boxes = '/api/organization/acme/box';
  expect((await api(base, 'POST', boxes, { token, json: { name: box, is_public: true } })).status).toBe(201);
  expect((await api(base, 'POST', `${boxes}/${box}/version`, { token, json: { version_number: '1.0.0' } })).status).toBe(201);
  expect((await api(base, 'POST', `${boxes}/${box}/version/1.0.0/provider`, { token, json: { name: 'virtualbox' } })).status).toBe(201);
  expect((await api(base, 'POST', `${boxes}/${box}/version/1.0.0/provider/virtualbox/architecture`, { token, json: { name: 'amd64' } })).status).toBe(201);
}

async function uploadBox(base: string, token: string, box: string, data: Buffer, chunkDelayMs = 0, hold?: Promise<void>): Promise<number> {
  const response = await fetch(`${base}${archPath(box, 'amd64')}/file/upload`, {
    method: 'POST',
    headers: { 'x-access-token': token, 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box' },
    body: trickle(chunked(data, 8), chunkDelayMs, hold),
    duplex: 'half',
  } as RequestInit);
  await response.text();
  return response.status;
}

async function signIn(base: string, username: string, password: string): Promise<string> {
  const response = await api(base, 'POST', '/api/auth/signin', { json: { username, password } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.access_token as string;
}

/** Files under a directory with their sha256, by relative path. */
async function walk(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    const path = relative(dir, join(entry.parentPath, entry.name));
    out[path] = sha256(await readFile(join(dir, path)));
  }
  return out;
}

async function homeDatabase(home: string, port: number): Promise<pg.Client> {
  const secrets = JSON.parse(await readFile(join(home, 'secrets.json'), 'utf8')) as { postgres_password: string };
  const client = new pg.Client({ connectionString: `postgres://postgres:${encodeURIComponent(secrets.postgres_password)}@127.0.0.1:${port}/boxyard` });
  await client.connect();
  return client;
}

async function referencedKeys(client: pg.Client): Promise<{ 'box-repository': string[]; 'file-share': string[] }> {
  const keys = async (query: string) => (await client.query<{ key: string }>(query)).rows.map((r) => r.key).sort();
  return {
    'box-repository': await keys('select storage_key as key from box_repository.files'),
    'file-share': await keys('select storage_key as key from file_share.entries where storage_key is not null'),
  };
}

let work: string;
let homeA: string;
let homeB: string;
let devB: DevProcess | undefined;
let backupDir: string;
let manifest: Manifest;
const box = await makeBox({ fillerBytes: 2 * MiB });
const inFlightBox = await makeBox({ fillerBytes: MiB });
let backupRun: { code: number | null; stdout: string; stderr: string };

beforeAll(async () => {
  // As root, PostgreSQL runs as `postgres`: everything it needs must be reachable (0755, not mkdtemp's 0700).
  work = await mkdtemp(join(tmpdir(), 'boxyard-backup-'));
  await chmod(work, 0o755);
  homeA = await newHome('home-a');
  homeB = await newHome('home-b');
  backupDir = join(work, 'backup');

  const devA = await startDev(homeA, await freePort());
  try {
    const boxes = devA.urls['box-repository']!;
    const share = devA.urls['file-share']!;
    const admin = await signIn(boxes, 'admin', ADMIN_PASSWORD);
    expect((await api(boxes, 'POST', '/api/organization', { token: admin, json: { name: 'acme' } })).status).toBe(201);
    await createBox(boxes, admin, 'base');
    await createBox(boxes, admin, 'inflight');
    expect(await uploadBox(boxes, admin, 'base', box)).toBe(201);
    expect((await api(boxes, 'POST', '/api/auth/signup', { json: { username: 'alice', email: 'alice@example.test', password: ALICE_PASSWORD } })).status).toBe(
      201,
    );
    const shareUser = await api(share, 'POST', '/api/users', { auth: adminBasic, json: { username: 'alice', password: ALICE_PASSWORD, role: 'user' } });
    expect(shareUser.status, JSON.stringify(shareUser.body)).toBe(201);
    for (const [path, data] of Object.entries(tree)) expect(await uploadShareFile(share, path, data)).toBe(201);
    // A replaced and a deleted file: their old bytes are garbage, which a backup must not carry.
    expect(await uploadShareFile(share, 'replaced.txt', Buffer.from('first version\n'))).toBe(201);
    expect(await uploadShareFile(share, 'replaced.txt', Buffer.from('second version\n'))).toBe(200);
    tree['replaced.txt'] = Buffer.from('second version\n');
    expect(await uploadShareFile(share, 'gone.txt', Buffer.from('deleted before the backup\n'))).toBe(201);
    expect((await api(share, 'DELETE', '/data/gone.txt', { auth: adminBasic })).status).toBe(200);

    // The backup runs while these are still streaming in.
    let release = () => {};
    const hold = new Promise<void>((resolve) => (release = resolve));
    const uploads = [
      ...inFlight.map((f) => uploadShareFile(share, f.path, f.data, f.chunkDelayMs)),
      uploadShareFile(share, held.path, held.data, 20, hold),
      uploadBox(boxes, admin, 'inflight', inFlightBox, 20, hold),
    ];
    await sleep(100);
    try {
      backupRun = await boxyard(['backup', backupDir], devEnv(homeA, devA.postgresPort));
    } finally {
      release();
    }
    expect(backupRun.code, backupRun.stderr + backupRun.stdout).toBe(0);
    expect(await Promise.all(uploads)).toEqual(uploads.map(() => 201));
  } finally {
    await devA.stop();
  }
  manifest = await readManifest(backupDir);
}, 120_000);

afterAll(async () => {
  await devB?.stop();
  await Promise.all([...running].map((dev) => dev.stop()));
  if (work) await rm(work, { recursive: true, force: true });
});

describe('boxyard backup', () => {
  it('prints a summary and writes a private, complete backup: manifest, tables, objects, secrets', async () => {
    expect(backupRun.stdout).toContain(`boxyard backup: wrote ${backupDir}`);
    expect(backupRun.stdout).toMatch(/file-share\s+\d+ tables, \d+ rows, \d+ objects/);
    expect((await stat(backupDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(backupDir, 'secrets.json'))).mode & 0o777).toBe(0o600);
    expect(manifest.format_version).toBe(1);
    expect(Object.keys(manifest.services).sort()).toEqual(['box-repository', 'file-share', 'terminal']);
    const share = manifest.services['file-share']!;
    expect(share.schema).toBe('file_share');
    expect(share.migrations.map((m) => m.id)).toContain('file-share:0001_tree');
    // Transient tables are not in it; the tree is, with one object per file entry (no garbage, no orphans).
    expect(share.tables.map((t) => t.name)).not.toContain('object_garbage');
    expect(share.tables.map((t) => t.name)).not.toContain('rate_limit_counters');
    expect(manifest.services.terminal!.tables.map((t) => t.name)).not.toContain('terminal_sessions');
    const entries = share.tables.find((t) => t.name === 'entries')!;
    const files = (await readFile(join(backupDir, entries.file), 'utf8')).split('\n').filter((line) => line.includes('\tfile\t'));
    expect(share.objects.length).toBe(files.length);
    expect(manifest.services['box-repository']!.objects.length).toBeGreaterThanOrEqual(1);
    // No half backup next to it.
    expect((await readdir(work)).filter((name) => name.includes('partial'))).toEqual([]);
  });

  it('refuses a target directory that is not empty', async () => {
    const result = await boxyard(['backup', backupDir], devEnv(homeA, 1));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('exists and is not empty');
    expect(result.stderr).not.toMatch(/\n[ \t]+at /); // no stack trace for a user's mistake
  });

  it('exits 2 with the usage for a missing directory', async () => {
    const result = await boxyard(['restore'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('restore takes one directory');
  });
});

describe('boxyard restore into a fresh home', () => {
  let restoreRun: { code: number | null; stdout: string; stderr: string };
  let portB: number;

  beforeAll(async () => {
    portB = await freePort();
    restoreRun = await boxyard(['restore', backupDir], devEnv(homeB, portB));
    expect(restoreRun.code, restoreRun.stderr + restoreRun.stdout).toBe(0);
    devB = await startDev(homeB, portB);
  }, 120_000);

  it('restores the secrets (0600) and prints what it restored', async () => {
    expect(restoreRun.stdout).toContain(`restored into ${homeB}`);
    expect(await readFile(join(homeB, 'secrets.json'), 'utf8')).toBe(await readFile(join(homeA, 'secrets.json'), 'utf8'));
    expect((await stat(join(homeB, 'secrets.json'))).mode & 0o777).toBe(0o600);
  });

  it('serves the same box to the real vagrant client (same sha256)', async () => {
    const boxes = devB!.urls['box-repository']!;
    const metadata = await api(boxes, 'GET', '/acme/base');
    expect(metadata.body.versions[0].providers[0].checksum).toBe(sha256(box));
    const vagrantHome = join(work, 'vagrant');
    await mkdir(vagrantHome, { recursive: true });
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: vagrantHome,
      VAGRANT_HOME: join(vagrantHome, 'vagrant.d'),
      VAGRANT_CHECKPOINT_DISABLE: '1',
      VAGRANT_SERVER_URL: boxes,
    };
    // Vagrant checks the downloaded bytes against that sha256 itself.
    const added = await run('vagrant', ['box', 'add', 'acme/base'], { env, timeout: 120_000 });
    expect(added.stdout).toContain("Successfully added box 'acme/base' (v1.0.0) for 'virtualbox'");
  });

  it('has no trace of the box upload that was still streaming when the backup finished', async () => {
    const boxes = devB!.urls['box-repository']!;
    expect((await api(boxes, 'GET', `${archPath('inflight', 'amd64')}/file`)).status).toBe(404);
    expect((await api(boxes, 'GET', archPath('inflight', 'amd64'))).status).toBe(200); // its architecture was committed before
  });

  it('gives wget --mirror the same tree byte for byte; in-flight files are whole or absent', async () => {
    const url = new URL(`${devB!.urls['file-share']!}/data/`);
    url.username = 'admin';
    url.password = ADMIN_PASSWORD;
    const dest = join(work, 'mirror');
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
    for (const path of Object.keys(mirrored)) if (/(^|\/)index\.html/.test(path)) delete mirrored[path];
    const expected = Object.fromEntries(Object.entries(tree).map(([path, data]) => [path, sha256(data)]));
    let present = 0;
    for (const file of inFlight) {
      if (mirrored[file.path] === undefined) continue;
      expect(mirrored[file.path], `${file.path} must be whole`).toBe(sha256(file.data));
      expected[file.path] = sha256(file.data);
      present++;
    }
    expect(mirrored).toEqual(expected);
    expect(mirrored[held.path]).toBeUndefined();
    console.log(`in-flight uploads captured by the backup: ${present} of ${inFlight.length} files`);
  });

  it('lets the same accounts sign in: admin and the second user, in both services', async () => {
    const boxes = devB!.urls['box-repository']!;
    const share = devB!.urls['file-share']!;
    await signIn(boxes, 'admin', ADMIN_PASSWORD);
    await signIn(boxes, 'alice', ALICE_PASSWORD);
    for (const [username, password] of [
      ['admin', ADMIN_PASSWORD],
      ['alice', ALICE_PASSWORD],
    ] as const) {
      expect((await api(share, 'POST', '/auth/login/basic', { json: { username, password } })).status).toBe(200);
    }
    expect((await api(share, 'POST', '/auth/login/basic', { json: { username: 'alice', password: 'wrong-password-1A' } })).status).toBe(401);
  });

  it('leaves no object without a row in the restored storage', async () => {
    const client = await homeDatabase(homeB, portB);
    try {
      const keys = await referencedKeys(client);
      for (const service of ['box-repository', 'file-share'] as const) {
        const stored = Object.keys(await walk(join(homeB, service, 'objects'))).sort();
        expect(stored, service).toEqual(keys[service]);
        expect(Object.keys(await walk(join(homeB, service, '.tmp')))).toEqual([]);
      }
    } finally {
      await client.end();
    }
  });

  it('refuses to restore into an installation that holds data', async () => {
    const result = await boxyard(['restore', backupDir], devEnv(homeB, portB));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/box-repository: schema box_repository in .* already holds data/);
    expect(result.stderr).not.toMatch(/\n[ \t]+at /);
  });

  it('refuses a corrupted backup, naming the file, before writing anything', async () => {
    const corrupted = join(work, 'corrupted');
    await cp(backupDir, corrupted, { recursive: true });
    const entries = manifest.services['file-share']!.tables.find((t) => t.name === 'entries')!;
    const bytes = await readFile(join(corrupted, entries.file));
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = bytes[middle]! ^ 0x01;
    await writeFile(join(corrupted, entries.file), bytes);
    const target = await newHome('home-corrupted');
    const result = await boxyard(['restore', corrupted], devEnv(target, await freePort()));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`backup file ${entries.file} is corrupted`);
    expect(await readdir(target)).toEqual([]);
  });

  it('takes a new snapshot when an object it names is deleted before it is copied', async () => {
    const config = join(work, 'host-b.yaml');
    await writeFile(config, `home: ${homeB}\ndatabase:\n  embedded:\n    port: ${portB}\n`);
    const client = await homeDatabase(homeB, portB);
    let deletedKey = '';
    try {
      deletedKey = (await client.query<{ key: string }>("select storage_key as key from file_share.entries where path = '/data/README.txt'")).rows[0]!.key;
      const again = join(work, 'backup-again');
      const result = await backup(again, {
        configFile: config,
        afterSnapshot: async (attempt) => {
          if (attempt !== 1) return;
          // Between the snapshot and the copy: the file goes, and its bytes right after the commit.
          expect((await api(devB!.urls['file-share']!, 'DELETE', '/data/README.txt', { auth: adminBasic })).status).toBe(200);
          const object = join(homeB, 'file-share', 'objects', ...deletedKey.split('/'));
          await expect
            .poll(
              () =>
                stat(object).then(
                  () => true,
                  () => false,
                ),
              { timeout: 20_000 },
            )
            .toBe(false);
        },
      });
      expect(result.snapshots).toEqual([2]);
      const keys = result.manifest.services['file-share']!.objects.map((o) => o.key);
      expect(keys).not.toContain(deletedKey);
      expect(keys.sort()).toEqual((await referencedKeys(client))['file-share']);
      // Only the manifest's objects are on disk: the ones copied for the first snapshot and not named by the second are gone.
      expect(Object.keys(await walk(join(again, 'objects', 'file-share'))).length).toBe(keys.length);
    } finally {
      await client.end();
    }
  });
});

describe('boxyard restore --config into another database and an S3 bucket', () => {
  let bucket: TestBucket;
  let databaseUrl: string;

  beforeAll(async () => {
    bucket = await createTestBucket('restore');
    databaseUrl = await createTestDatabase('restore');
  });
  afterAll(async () => {
    const names: string[] = [];
    for await (const item of bucket.client.listObjectsV2(bucket.bucket, '', true)) names.push((item as { name: string }).name);
    if (names.length > 0) await bucket.client.removeObjects(bucket.bucket, names);
    await bucket.client.removeBucket(bucket.bucket).catch(ignoreError("teardown: a bucket still holding objects is left to the test run's cleanup"));
  });

  it('writes the rows into the database and the objects into the bucket under the same keys', async () => {
    const home = await newHome('home-s3');
    const s3 = (prefix: string) => ({
      storage: {
        driver: 's3',
        endpoint: bucket.endpoint,
        access_key: bucket.accessKey,
        secret_key: bucket.secretKey,
        bucket: bucket.bucket,
        region: bucket.region,
        prefix,
      },
    });
    const config = join(work, 'host-s3.yaml');
    await writeFile(
      config,
      JSON.stringify({ home, database: { url: databaseUrl }, services: { 'box-repository': s3('box-repository'), 'file-share': s3('file-share') } }),
    );
    const result = await boxyard(['restore', backupDir, '--config', config], {});
    expect(result.code, result.stderr + result.stdout).toBe(0);

    const names: string[] = [];
    for await (const item of bucket.client.listObjectsV2(bucket.bucket, '', true)) names.push((item as { name: string }).name);
    const expected = Object.entries(manifest.services).flatMap(([service, s]) => s.objects.map((o) => `${service}/${o.key}`));
    expect(names.sort()).toEqual(expected.sort());
    const boxKey = manifest.services['box-repository']!.objects.find((o) => o.sha256 === sha256(box))!.key;
    const body = await bucket.client.getObject(bucket.bucket, `box-repository/${boxKey}`);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(box));

    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      for (const [service, s] of Object.entries(manifest.services)) {
        for (const table of s.tables) {
          const rows = Number((await client.query<{ n: string }>(`select count(*) as n from "${s.schema}"."${table.name}"`)).rows[0]!.n);
          expect(rows, `${service}.${table.name}`).toBe(table.rows);
        }
      }
      // Identity sequences continue after the restored ids.
      const next = await client.query<{ id: string; max: string }>(
        "select nextval(pg_get_serial_sequence('file_share.entries', 'id'))::text as id, (select max(id) from file_share.entries)::text as max",
      );
      expect(BigInt(next.rows[0]!.id)).toBeGreaterThan(BigInt(next.rows[0]!.max));
    } finally {
      await client.end();
    }
  });
});
