// Starts a real file share for a test file: its own database, its own bucket (s3 driver on the run's MinIO) or
// directory (local driver), a known admin password, and helpers to call it the way clients do.
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestBucket, createTestDatabase, type TestBucket } from '@boxyard/test/harness/fixtures.ts';
import { startFileShare, type RunningFileShare } from '../service.ts';
import { fileShareConfigSchema, type FileShareConfig } from '../config.ts';

export const ADMIN_PASSWORD = 'Admin-Pass-2024!';

export interface TestShare {
  share: RunningFileShare;
  url: string;
  config: FileShareConfig;
  databaseUrl: string;
  bucket?: TestBucket;
  /** The local driver's root directory. */
  localRoot?: string;
  /** Prefix of the share's objects in the bucket (s3 driver). */
  prefix: string;
  close(): Promise<void>;
}

export interface TestShareOptions {
  storage?: 's3' | 'local';
  /** Reuse a database / bucket (a second replica of the same share). */
  databaseUrl?: string;
  bucket?: TestBucket;
  localRoot?: string;
  overrides?: Record<string, unknown>;
  sseRetryMs?: number;
  sessionSecret?: string;
}

export const sharedSecret = () => randomBytes(32).toString('base64url');

export async function startTestShare(options: TestShareOptions = {}): Promise<TestShare> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase('fs'));
  const prefix = 'file-share';
  let storage: Record<string, unknown>;
  let bucket: TestBucket | undefined;
  let localRoot: string | undefined;
  if ((options.storage ?? 's3') === 's3') {
    bucket = options.bucket ?? (await createTestBucket('fs'));
    storage = {
      driver: 's3',
      endpoint: bucket.endpoint,
      access_key: bucket.accessKey,
      secret_key: bucket.secretKey,
      bucket: bucket.bucket,
      region: bucket.region,
      prefix,
    };
  } else {
    localRoot = options.localRoot ?? join(await mkdtemp(join(tmpdir(), 'fs-local-')), 'store');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(localRoot, { recursive: true });
    storage = { driver: 'local', root: localRoot };
  }
  const base = {
    server: { host: '127.0.0.1', port: 0 },
    // OS-chosen like the public port, also when a test fixes that one (files run in parallel).
    metrics: { port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl, pool_size: 5 },
    storage,
    rate_limiting: { enabled: false },
    session: { secret: options.sessionSecret ?? sharedSecret() },
    admin: { username: 'admin', password: ADMIN_PASSWORD },
    uploads: { max_bytes: 8 * 1024 * 1024 },
  };
  const config = fileShareConfigSchema.parse(deepMerge(base, options.overrides ?? {}));
  const share = await startFileShare(config, { sseRetryMs: options.sseRetryMs ?? 200, sweepIntervalMs: 500 });
  return {
    share,
    url: share.url,
    config,
    databaseUrl,
    ...(bucket ? { bucket } : {}),
    ...(localRoot ? { localRoot } : {}),
    prefix,
    close: () => share.close(),
  };
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object' && !Array.isArray(current)
        ? deepMerge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

export const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
export const adminAuth = basic('admin', ADMIN_PASSWORD);

/** Creates a user through the API (as the admin) and returns its Basic header. */
export async function createUser(url: string, username: string, role: 'admin' | 'user'): Promise<{ authorization: string; password: string }> {
  const password = `Pw-${randomBytes(6).toString('hex')}-9aA`;
  const response = await fetch(`${url}/api/users`, {
    method: 'POST',
    headers: { authorization: adminAuth, 'content-type': 'application/json' },
    body: JSON.stringify({ username, password, role }),
  });
  if (response.status !== 201) throw new Error(`creating ${username}: ${response.status} ${await response.text()}`);
  return { authorization: basic(username, password), password };
}

/** Creates an API key with the given credentials and returns its token. */
export async function createKey(url: string, authorization: string, body: Record<string, unknown>): Promise<{ token: string; id: string }> {
  const response = await fetch(`${url}/api/api-keys`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`creating a key: ${response.status} ${await response.text()}`);
  const json = (await response.json()) as { data: { token: string; key: { id: string } } };
  return { token: json.data.token, id: json.data.key.id };
}

/** Uploads bytes with fetch + FormData (multipart part `file`). */
export async function upload(url: string, path: string, content: string | Uint8Array, authorization: string, filename = 'upload.bin'): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([typeof content === 'string' ? Buffer.from(content) : content]), filename);
  return fetch(`${url}${path}`, { method: 'POST', headers: { authorization }, body: form });
}

export async function postJson(url: string, path: string, body: unknown, authorization?: string, method = 'POST'): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
}

/** Every object key in the share's bucket prefix (s3) — what a storage-level leak would show. */
export async function bucketKeys(test: TestShare, prefix = test.prefix): Promise<string[]> {
  const keys: string[] = [];
  for await (const item of test.bucket!.client.listObjectsV2(test.bucket!.bucket, prefix, true)) {
    if ((item as { name?: string }).name) keys.push((item as { name: string }).name);
  }
  return keys.sort();
}

/** Polls until `check` returns true (background work such as deleting replaced bytes). */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
