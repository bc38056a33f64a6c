// A box repository started for a test file on the run's PostgreSQL and MinIO (or a local directory), with an
// admin, helpers to create users, organizations and boxes through the API, and a small HTTP client.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createTestBucket, createTestDatabase, type TestBucket } from '@boxyard/test/harness/fixtures.ts';
import { startBoxRepository, type RunningBoxRepository } from '../service.ts';
import { boxRepositoryConfigSchema, type BoxRepositoryConfig } from '../config.ts';
import type { TestHooks } from '../context.ts';
import { ignoreError } from '@boxyard/kit';

export const ADMIN_PASSWORD = 'Admin-Passw0rd-For-Tests';
export const USER_PASSWORD = 'User-Passw0rd-For-Tests';

export interface TestServiceOptions {
  storage?: 'local' | 's3';
  hooks?: TestHooks;
  /** Overrides merged into each config section. */
  config?: { [K in keyof BoxRepositoryConfig]?: Record<string, unknown> };
  /** An existing directory for the local driver. */
  localRoot?: string;
  /** A database of the caller's own PostgreSQL instead of a fresh one on the run's (a fault test kills its own). */
  databaseUrl?: string;
  /** A bucket of the caller's own MinIO instead of a fresh one on the run's (s3 storage). */
  bucket?: TestBucket;
  /** The port to listen on (default: a free one), e.g. to name it in server.public_url beforehand. */
  port?: number;
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  json?: unknown;
  body?: string | Buffer | Uint8Array | FormData | ReadableStream;
}

export interface TestService {
  url: string;
  running: RunningBoxRepository;
  config: BoxRepositoryConfig;
  databaseUrl: string;
  bucket: TestBucket | undefined;
  localRoot: string | undefined;
  adminToken: string;
  // Tests read response bodies freely; a loose type keeps them short.
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  signIn(username: string, password: string): Promise<string>;
  /** Signs up a user and returns a session token. */
  createUser(username: string): Promise<{ username: string; token: string }>;
  /** Keys of the stored objects (bucket or directory), and uploads in progress (local .tmp). */
  storedObjects(): Promise<string[]>;
  /** A query on the service's schema (for what users can't see through the API: outbox, clean-up queue). */
  sql<R extends Record<string, unknown> = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

const deepMerge = (base: Record<string, unknown>, over: Record<string, unknown> = {}) => {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] =
      typeof value === 'object' && value !== null && !Array.isArray(value) && typeof current === 'object' && current !== null
        ? { ...(current as Record<string, unknown>), ...(value as Record<string, unknown>) }
        : value;
  }
  return out;
};

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase('boxrepo'));
  let bucket: TestBucket | undefined;
  let localRoot: string | undefined;
  let ownRoot = false;
  let storage: Record<string, unknown>;
  if (options.storage === 's3') {
    bucket = options.bucket ?? (await createTestBucket('boxrepo'));
    storage = {
      driver: 's3',
      endpoint: bucket.endpoint,
      access_key: bucket.accessKey,
      secret_key: bucket.secretKey,
      bucket: bucket.bucket,
      region: bucket.region,
      prefix: 'box-repository',
    };
  } else {
    localRoot = options.localRoot ?? ((ownRoot = true), await mkdtemp(join(tmpdir(), 'boxrepo-')));
    storage = { driver: 'local', root: localRoot };
  }
  const base = {
    server: { host: '127.0.0.1', port: 0 },
    // OS-chosen like the public port, also when a test fixes that one (files run in parallel).
    metrics: { port: 0 },
    logging: { level: process.env.BOXREPO_TEST_LOG ?? 'silent' },
    database: { url: databaseUrl },
    storage,
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: ADMIN_PASSWORD },
    rate_limiting: { enabled: false },
    // The helpers sign their users up.
    auth: { sign_up: 'open' },
  };
  const config = boxRepositoryConfigSchema.parse(deepMerge(base, options.config as Record<string, unknown>));
  const running = await startBoxRepository(config, { port: options.port ?? 0, hooks: options.hooks ?? {}, print: () => {} });
  // Beside an HTTPS listener (self-signed until a test uploads one), the helpers talk to the unencrypted one.
  const url = running.unencryptedUrl ?? running.url;

  async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers['x-access-token'] = opts.token;
    let body = opts.body;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  async function signIn(username: string, password: string): Promise<string> {
    const response = await request<{ access_token: string }>('POST', '/api/auth/signin', { json: { username, password } });
    if (response.status !== 200) throw new Error(`sign-in of ${username} failed: ${response.status} ${response.text}`);
    return response.body.access_token;
  }

  const adminToken = await signIn('admin', ADMIN_PASSWORD);

  return {
    url,
    running,
    config,
    databaseUrl,
    bucket,
    localRoot,
    adminToken,
    request,
    signIn,
    async createUser(username) {
      const created = await request('POST', '/api/auth/signup', { json: { username, email: `${username}@example.test`, password: USER_PASSWORD } });
      if (created.status !== 201) throw new Error(`sign-up of ${username} failed: ${created.status} ${created.text}`);
      return { username, token: await signIn(username, USER_PASSWORD) };
    },
    async storedObjects() {
      if (bucket) {
        const names: string[] = [];
        for await (const item of bucket.client.listObjectsV2(bucket.bucket, '', true)) names.push((item as { name: string }).name);
        const uploads: string[] = [];
        for await (const upload of bucket.client.listIncompleteUploads(bucket.bucket, '', true)) uploads.push(`incomplete:${(upload as { key: string }).key}`);
        return [...names, ...uploads];
      }
      const entries = await readdir(localRoot!, { recursive: true, withFileTypes: true }).catch(() => []);
      return entries.filter((e) => e.isFile() && !e.name.startsWith('.check-')).map((e) => join(e.parentPath, e.name).slice(localRoot!.length + 1));
    },
    async sql(text, values = []) {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(`set search_path to ${config.database.schema}`);
        return (await client.query(text, values)).rows;
      } finally {
        await client.end();
      }
    },
    async close() {
      await running.close();
      if (bucket) {
        const names: string[] = [];
        for await (const item of bucket.client.listObjectsV2(bucket.bucket, '', true)) names.push((item as { name: string }).name);
        if (names.length > 0) await bucket.client.removeObjects(bucket.bucket, names);
        await bucket.client.removeBucket(bucket.bucket).catch(ignoreError("teardown: a bucket still holding objects is left to the test run's cleanup"));
      }
      if (ownRoot && localRoot) await rm(localRoot, { recursive: true, force: true });
    },
  };
}

export interface BoxPath {
  org: string;
  box: string;
  version: string;
  provider: string;
  arch: string;
}

export const archPath = (p: BoxPath) => `/api/organization/${p.org}/box/${p.box}/version/${p.version}/provider/${p.provider}/architecture/${p.arch}`;

/** Creates whatever of box > version > provider > architecture does not exist yet (the organization must). */
export async function createBoxPath(service: TestService, token: string, path: BoxPath, box: Record<string, unknown> = {}): Promise<void> {
  const expectCreated = (response: ApiResponse, what: string) => {
    if (response.status !== 201 && response.status !== 409) throw new Error(`creating ${what} failed: ${response.status} ${response.text}`);
  };
  const boxUrl = `/api/organization/${path.org}/box`;
  expectCreated(await service.request('POST', boxUrl, { token, json: { name: path.box, ...box } }), 'box');
  expectCreated(await service.request('POST', `${boxUrl}/${path.box}/version`, { token, json: { versionNumber: path.version } }), 'version');
  expectCreated(await service.request('POST', `${boxUrl}/${path.box}/version/${path.version}/provider`, { token, json: { name: path.provider } }), 'provider');
  expectCreated(
    await service.request('POST', `${boxUrl}/${path.box}/version/${path.version}/provider/${path.provider}/architecture`, { token, json: { name: path.arch } }),
    'architecture',
  );
}

export async function createOrganization(service: TestService, name: string, extra: Record<string, unknown> = {}): Promise<void> {
  const response = await service.request('POST', '/api/organization', { token: service.adminToken, json: { name, ...extra } });
  if (response.status !== 201) throw new Error(`creating organization ${name} failed: ${response.status} ${response.text}`);
}

export async function addMember(service: TestService, org: string, username: string, role: 'admin' | 'moderator' | 'user'): Promise<void> {
  const response = await service.request('PUT', `/api/organization/${org}/members/${username}`, { token: service.adminToken, json: { role } });
  if (response.status !== 200) throw new Error(`adding ${username} to ${org} failed: ${response.status} ${response.text}`);
}

/** Raw-body upload. */
export function uploadRaw(
  service: TestService,
  path: BoxPath,
  data: Buffer,
  options: { token?: string; query?: string; headers?: Record<string, string> } = {},
) {
  return service.request<any>('POST', `${archPath(path)}/file/upload${options.query ? `?${options.query}` : ''}`, {
    ...(options.token ? { token: options.token } : {}),
    headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box', ...options.headers },
    body: data,
  });
}
