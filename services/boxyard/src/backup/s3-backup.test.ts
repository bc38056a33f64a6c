// `boxyard backup s3://…` / `boxyard restore s3://…` for one service (`--service`, the way a Kubernetes Job runs
// them), against each of the run's real S3 servers (MinIO, SeaweedFS) and its PostgreSQL: a file share with files written through its API is backed
// up into a bucket prefix, restored into a new database and prefix, and serves the same bytes. Refusals: a
// non-empty backup prefix, credentials that cannot write, a restore into a target that holds data, a backup made
// by a newer Boxyard; each exits 1 with one clear line and leaves the target as it was.
import { spawn } from 'node:child_process';
import { randomBytes, createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileShareConfigSchema } from '@boxyard/file-share/config.ts';
import { startFileShare, type RunningFileShare } from '@boxyard/file-share/service.ts';
import { ADMIN_PASSWORD, adminAuth, upload } from '@boxyard/file-share/testing/test-share.ts';
import { createTestBucket, createTestDatabase, s3Server, s3Servers, type S3ServerName, type TestBucket } from '@boxyard/test/harness/fixtures.ts';
import type { BackupResult } from './cli.ts';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const files: Record<string, Buffer> = {
  'README.txt': Buffer.from('top level\n'),
  'empty.dat': Buffer.alloc(0),
  'docs/guide with spaces.md': Buffer.from('# Guide\n'),
  'bin/data.bin': randomBytes(3 * 1024 * 1024 + 5),
};

let work: string;
let storage: TestBucket;
let backups: TestBucket;
let shareA: RunningFileShare | undefined;
let shareB: RunningFileShare | undefined;
const databases: Record<string, string> = {};

function shareConfig(databaseUrl: string, prefix: string): Record<string, unknown> {
  return {
    server: { host: '127.0.0.1', port: 0 },
    metrics: { port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl, schema: 'file_share', pool_size: 3 },
    storage: {
      driver: 's3',
      endpoint: storage.endpoint,
      access_key: storage.accessKey,
      secret_key: storage.secretKey,
      bucket: storage.bucket,
      region: storage.region,
      prefix,
    },
    rate_limiting: { enabled: false },
    session: { secret: 's'.repeat(48) },
    admin: { username: 'admin', password: ADMIN_PASSWORD },
  };
}

async function writeConfig(name: string, prefix: string): Promise<string> {
  databases[name] = await createTestDatabase('bk');
  const file = join(work, `${name}.yaml`);
  await writeFile(file, JSON.stringify(shareConfig(databases[name], prefix))); // JSON is YAML
  return file;
}

const s3Env = (secretKey = backups.secretKey) => ({
  AWS_ENDPOINT_URL: backups.endpoint,
  AWS_ACCESS_KEY_ID: backups.accessKey,
  AWS_SECRET_ACCESS_KEY: secretKey,
});

async function boxyard(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, out };
}

async function keys(bucket: TestBucket, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of bucket.client.listObjectsV2(bucket.bucket, prefix, true)) names.push((item as { name: string }).name);
  return names.sort();
}

async function schemaTables(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>("select count(*) as n from information_schema.tables where table_schema = 'file_share'")).rows[0]!.n);
  } finally {
    await client.end();
  }
}

let configA: string;
let resultFile: string;
const location = () => `s3://${backups.bucket}/nightly/first`;

/** The share to back up, its storage and the backups' bucket on `server`. */
async function setUp(server: S3ServerName): Promise<void> {
  delete files['replaced.txt']; // the previous server's run added it; it is written below, twice
  work = await mkdtemp(join(tmpdir(), 'boxyard-s3-backup-'));
  storage = await createTestBucket('bks', s3Server(server));
  backups = await createTestBucket('bkb', s3Server(server));
  configA = await writeConfig('a', 'share-a');
  shareA = await startFileShare(fileShareConfigSchema.parse(JSON.parse(await readFile(configA, 'utf8'))));
  for (const [path, data] of Object.entries(files)) expect((await upload(shareA.url, `/data/${path}`, data, adminAuth)).status).toBe(201);
  // Replaced: the old bytes stay in storage a while, but no row names them, so the backup leaves them out.
  expect((await upload(shareA.url, '/data/replaced.txt', 'first\n', adminAuth)).status).toBe(201);
  expect((await upload(shareA.url, '/data/replaced.txt', 'second\n', adminAuth)).status).toBe(200);
  files['replaced.txt'] = Buffer.from('second\n');
  resultFile = join(work, 'result.json');
}

async function tearDown(): Promise<void> {
  await shareA?.close();
  await shareB?.close();
  shareA = shareB = undefined;
  if (work) await rm(work, { recursive: true, force: true });
}

describe.each(s3Servers)('boxyard backup/restore s3://bucket/prefix --service ($server)', ({ server }) => {
  beforeAll(() => setUp(server), 60_000);
  afterAll(tearDown);

  it('backs the running service up into the prefix, manifest included, and reports the result', async () => {
    const run = await boxyard(['backup', location(), '--service', 'file-share', '--config', configA, '--result-file', resultFile], s3Env());
    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain(`wrote s3://${backups.bucket}/nightly/first`);
    const result = JSON.parse(await readFile(resultFile, 'utf8')) as BackupResult;
    expect(result).toMatchObject({ ok: true, location: `s3://${backups.bucket}/nightly/first`, objects: Object.keys(files).length }); // one object per file; the replaced version's old bytes are not named by any row
    const stored = await keys(backups, 'nightly/first/');
    expect(stored).toContain('nightly/first/manifest.json');
    const manifest = JSON.parse(await streamText(await backups.client.getObject(backups.bucket, 'nightly/first/manifest.json'))) as {
      boxyard_version: string;
      services: Record<string, { objects: unknown[] }>;
    };
    expect(Object.keys(manifest.services)).toEqual(['file-share']);
    expect(manifest.boxyard_version).toMatch(/^\d+\.\d+\.\d+/);
    expect(result.bytes).toBeGreaterThan(files['bin/data.bin']!.length);
    expect(stored.some((k) => k.includes('write-check'))).toBe(false);
  }, 60_000);

  it('refuses a prefix that already holds something, and credentials that cannot write there', async () => {
    const again = await boxyard(['backup', location(), '--service', 'file-share', '--config', configA], s3Env());
    expect(again.code).toBe(1);
    expect(again.out).toContain('is not empty');
    const denied = await boxyard(['backup', `s3://${backups.bucket}/other`, '--service', 'file-share', '--config', configA], s3Env('wrong-secret-key'));
    expect(denied.code).toBe(1);
    expect(denied.out).toMatch(/cannot (list|write)/);
    expect(denied.out).not.toContain('    at '); // no stack trace
    expect(await keys(backups, 'other/')).toEqual([]);
  }, 30_000);

  it('restores into an empty schema and prefix, and the restored share serves the same bytes', async () => {
    const configB = await writeConfig('b', 'share-b');
    const run = await boxyard(['restore', location(), '--service', 'file-share', '--config', configB], s3Env());
    expect(run.code, run.out).toBe(0);
    shareB = await startFileShare(fileShareConfigSchema.parse(JSON.parse(await readFile(configB, 'utf8'))));
    for (const [path, data] of Object.entries(files)) {
      const response = await fetch(`${shareB.url}/data/${path.split('/').map(encodeURIComponent).join('/')}`, { headers: { authorization: adminAuth } });
      expect(response.status, path).toBe(200);
      expect(sha256(Buffer.from(await response.arrayBuffer())), path).toBe(sha256(data));
    }
  }, 60_000);

  it('refuses to restore into a schema that holds data, leaving it as it was', async () => {
    const configA2 = join(work, 'a-again.yaml');
    await writeFile(configA2, JSON.stringify(shareConfig(databases.a!, 'share-a')));
    const before = await keys(storage, 'share-a/');
    const run = await boxyard(['restore', location(), '--service', 'file-share', '--config', configA2], s3Env());
    expect(run.code).toBe(1);
    expect(run.out).toContain('already holds data');
    expect(await keys(storage, 'share-a/')).toEqual(before);
  }, 30_000);

  it('refuses a backup made by a newer Boxyard before writing anything', async () => {
    for (const key of await keys(backups, 'nightly/first/')) {
      const body = Buffer.from(await streamText(await backups.client.getObject(backups.bucket, key), 'binary'), 'binary');
      const copy = key.endsWith('manifest.json')
        ? Buffer.from(body.toString('utf8').replace(/"boxyard_version": "[^"]*"/, '"boxyard_version": "99.0.0"'))
        : body;
      await backups.client.putObject(backups.bucket, key.replace('nightly/first/', 'future/'), copy);
    }
    const configC = await writeConfig('c', 'share-c');
    const run = await boxyard(['restore', `s3://${backups.bucket}/future`, '--service', 'file-share', '--config', configC], s3Env());
    expect(run.code).toBe(1);
    expect(run.out).toContain('made by Boxyard 99.0.0, newer than this Boxyard');
    expect(await schemaTables(databases.c!)).toBe(0);
    expect(await keys(storage, 'share-c/')).toEqual([]);
  }, 30_000);

  it('says when the location holds no backup', async () => {
    const configD = await writeConfig('d', 'share-d');
    const run = await boxyard(['restore', `s3://${backups.bucket}/nothing-here`, '--service', 'file-share', '--config', configD], s3Env());
    expect(run.code).toBe(1);
    expect(run.out).toContain('is not a Boxyard backup');
  }, 30_000);
});

async function streamText(stream: NodeJS.ReadableStream, encoding: BufferEncoding = 'utf8'): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString(encoding);
}
