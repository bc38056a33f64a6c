// The API's contract beyond access rules: every error status of the seed's table in problem-details form,
// validation with one errors[] entry per failing value, uniqueness (409), missing parents (404), both spellings
// of request members, pagination, sign-in and sign-up, events, the rate limit, configuration and `boxyard dev`.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '@boxyard/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { boxRepositoryConfigSchema } from './config.ts';
import { serviceDefinition } from './index.ts';
import { makeBox } from './testing/boxes.ts';
import { archPath, createBoxPath, createOrganization, startTestService, uploadRaw, USER_PASSWORD, type TestService } from './testing/test-service.ts';

/** The URL of a `Link` header's rel="next" entry. */
const nextOf = (link: string | null) =>
  link
    ?.split(', ')
    .find((entry) => entry.endsWith('>; rel="next"'))
    ?.slice(1, -'>; rel="next"'.length);

const PROBLEM = 'https://boxyard.io/problems';

describe('box repository API', () => {
  let service: TestService;
  const t = () => service.adminToken;
  beforeAll(async () => {
    service = await startTestService();
    await createOrganization(service, 'acme', { description: 'Acme boxes', email: 'boxes@acme.test' });
  });
  afterAll(async () => service?.close());

  describe('errors in problem-details form', () => {
    it('400: a body that cannot be read (validation family)', async () => {
      const response = await service.request('POST', '/api/organization/acme/box', {
        token: t(),
        headers: { 'content-type': 'application/json' },
        body: '{"name": ',
      });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({ type: `${PROBLEM}/validation`, status: 400, errors: [] });
    });

    it('422: one errors[] entry per failing value, with a JSON pointer, rule and params', async () => {
      const response = await service.request('POST', '/api/organization/acme/box', {
        token: t(),
        json: { name: 'bad name!', isPublic: 'perhaps', colour: 'red' },
      });
      expect(response.status).toBe(422);
      expect(response.body.type).toBe(`${PROBLEM}/validation`);
      expect(response.body.title).toBe('Validation failed');
      const byPointer = Object.fromEntries(response.body.errors.map((e: { pointer: string; rule: string }) => [e.pointer, e.rule]));
      expect(byPointer).toEqual({ '/name': 'pattern', '/is_public': 'type', '/colour': 'additionalProperties' });
      const version = await service.request('POST', '/api/organization/acme/box/nothing/version', { token: t(), json: { versionNumber: 'v1.0' } });
      expect(version.status).toBe(422);
      expect(version.body.errors).toEqual([expect.objectContaining({ pointer: '/version_number', rule: 'pattern' })]);
    });

    it('401: no token on a write (never 403), a bad or expired token; no errors entries', async () => {
      const none = await service.request('POST', '/api/organization/acme/box', { json: { name: 'x' } });
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ type: `${PROBLEM}/authentication`, errors: [] });
      expect(none.headers.get('www-authenticate')).toContain('Bearer');
      const admin = await service.running.ctx.accounts.findByUsername('admin');
      const expired = await service.running.ctx.tokens.sign(admin!.id, {}, -60);
      const response = await service.request('GET', '/api/user', { token: expired.token });
      expect(response.status).toBe(401);
      expect(response.body.detail).toBe('Session token expired');
      // A token signed with another secret, or an unsupported scheme.
      expect((await service.request('GET', '/api/user', { token: `${t().slice(0, -4)}AAAA` })).status).toBe(401);
      expect((await service.request('GET', '/api/user', { headers: { authorization: 'Digest abc' } })).status).toBe(401);
    });

    it('404: a missing parent at each level names it', async () => {
      const path = { org: 'acme', box: 'parents', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
      await createBoxPath(service, t(), path);
      const cases: [string, RegExp][] = [
        ['/api/organization/nobody/box', /Organization 'nobody' not found/],
        ['/api/organization/acme/box/nothing/version', /Box 'acme\/nothing' not found/],
        ['/api/organization/acme/box/parents/version/9.9.9/provider', /Version '9.9.9'/],
        ['/api/organization/acme/box/parents/version/1.0.0/provider/vmware/architecture', /Provider 'vmware'/],
        [`${archPath({ ...path, arch: 'sparc' })}/file`, /Architecture 'sparc'/],
        [`${archPath(path)}/file`, /No file has been uploaded/],
      ];
      for (const [url, detail] of cases) {
        const response = await service.request('GET', url, { token: t() });
        expect(response.status, url).toBe(404);
        expect(response.body).toMatchObject({ type: `${PROBLEM}/not-found`, errors: [] });
        expect(response.body.detail).toMatch(detail);
      }
      const create = await service.request('POST', '/api/organization/acme/box/nothing/version', { token: t(), json: { versionNumber: '1.0.0' } });
      expect(create.status).toBe(404);
    });

    it('409: a name taken in its scope (case-insensitively), type validation, one errors[] entry', async () => {
      const path = { org: 'acme', box: 'Taken', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
      await createBoxPath(service, t(), path);
      const cases: [string, unknown, string][] = [
        ['/api/organization', { name: 'ACME' }, '/name'],
        ['/api/organization/acme/box', { name: 'taken' }, '/name'],
        ['/api/organization/acme/box/taken/version', { version_number: '1.0.0' }, '/version_number'],
        ['/api/organization/acme/box/taken/version/1.0.0/provider', { name: 'VirtualBox' }, '/name'],
        ['/api/organization/acme/box/taken/version/1.0.0/provider/virtualbox/architecture', { name: 'amd64' }, '/name'],
      ];
      for (const [url, json, pointer] of cases) {
        const response = await service.request('POST', url, { token: t(), json });
        expect(response.status, url).toBe(409);
        expect(response.body).toMatchObject({ type: `${PROBLEM}/validation`, status: 409, errors: [{ pointer, rule: 'unique' }] });
      }
      // A rename onto a taken name, too.
      await service.request('POST', '/api/organization/acme/box', { token: t(), json: { name: 'other' } });
      expect((await service.request('PATCH', '/api/organization/acme/box/other', { token: t(), json: { name: 'TAKEN' } })).status).toBe(409);
    });

    it('429: past the rate limit, with RateLimit-* and Retry-After, no errors entries', async () => {
      const limited = await startTestService({ config: { rate_limiting: { enabled: true, max_requests: 3, window_seconds: 600 } } });
      try {
        const statuses: number[] = [];
        let last;
        for (let i = 0; i < 5; i++) {
          last = await limited.request('GET', '/api/organization');
          statuses.push(last.status);
        }
        // The sign-in of the test helper was the first request of the window.
        expect(statuses).toEqual([200, 200, 429, 429, 429]);
        expect(last!.body).toMatchObject({ type: `${PROBLEM}/throttled`, status: 429, errors: [] });
        expect(last!.headers.get('ratelimit-limit')).toBe('3');
        expect(last!.headers.get('ratelimit-remaining')).toBe('0');
        expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
        expect((await limited.request('GET', '/health')).status).toBe(200);
      } finally {
        await limited.close();
      }
    });
  });

  describe('requests and responses', () => {
    it('accept snake_case and camelCase members; answer flat snake_case records with 201', async () => {
      const camel = await service.request('POST', '/api/organization/acme/box', { token: t(), json: { name: 'camel', isPublic: true, guestAccess: true } });
      expect(camel.status).toBe(201);
      expect(camel.body).toMatchObject({ name: 'camel', tag: 'acme/camel', organization: 'acme', is_public: true, guest_access: true, published: true });
      const snake = await service.request('POST', '/api/organization/acme/box', { token: t(), json: { name: 'snake', is_public: true } });
      expect(snake.body.is_public).toBe(true);
      const version = await service.request('POST', '/api/organization/acme/box/snake/version', {
        token: t(),
        json: { version_number: '0.1.0', status: 'unreleased' },
      });
      expect(version.body).toMatchObject({ version_number: '0.1.0', status: 'unreleased' });
      await createBoxPath(service, t(), { org: 'acme', box: 'snake', version: '0.1.0', provider: 'virtualbox', arch: 'amd64' });
      const second = await service.request('POST', '/api/organization/acme/box/snake/version/0.1.0/provider/virtualbox/architecture', {
        token: t(),
        json: { name: 'arm64' },
      });
      expect(second.body.default_box).toBe(false); // the first architecture is the default
    });

    it('paginates lists with page/per_page, X-Total-Count and Link', async () => {
      for (const name of ['page-a', 'page-b', 'page-c']) await service.request('POST', '/api/organization/acme/box', { token: t(), json: { name } });
      const first = await service.request('GET', '/api/organization/acme/box?per_page=2', { token: t() });
      expect(first.body).toHaveLength(2);
      const total = Number(first.headers.get('x-total-count'));
      expect(total).toBeGreaterThanOrEqual(3);
      expect(first.headers.get('link')).toMatch(/^<\/api\/organization\/acme\/box\?[^>]*\bpage=2\b[^>]*>; rel="next"$/);
      const names = new Set<string>();
      for (let page = 1; page <= Math.ceil(total / 2); page++) {
        for (const box of (await service.request('GET', `/api/organization/acme/box?page=${page}&per_page=2`, { token: t() })).body) names.add(box.name);
      }
      expect(names.size).toBe(total);
      expect((await service.request('GET', '/api/organization/acme/box?per_page=1000', { token: t() })).status).toBe(422);
    });

    it("pages an organization's boxes by keyset: next links carry after, and give the same boxes in the same order as page=N", async () => {
      await createOrganization(service, 'keyset');
      // Created out of order and in mixed case: the list is by lower-cased name.
      const names = ['k-07', 'K-03', 'k-11', 'k-01', 'K-10', 'k-05', 'k-02', 'k-09', 'k-04', 'k-08', 'k-06'];
      for (const name of names) await service.request('POST', '/api/organization/keyset/box', { token: t(), json: { name, isPublic: true } });
      const expected = [...names].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
      const byPage: string[][] = [];
      for (let page = 1; page <= 3; page++)
        byPage.push(
          (await service.request('GET', `/api/organization/keyset/box?page=${page}&per_page=4`, { token: t() })).body.map((b: { name: string }) => b.name),
        );
      expect(byPage).toEqual([expected.slice(0, 4), expected.slice(4, 8), expected.slice(8)]);
      const followed: string[][] = [];
      const links: string[] = [];
      let next: string | undefined = '/api/organization/keyset/box?per_page=4';
      while (next) {
        const response: { body: { name: string }[]; headers: Headers } = await service.request('GET', next, { token: t() });
        followed.push(response.body.map((b: { name: string }) => b.name));
        links.push(response.headers.get('link') ?? '');
        next = nextOf(response.headers.get('link'));
      }
      expect(followed).toEqual(byPage);
      expect(links[0]).toContain(`after=${expected[3]}`);
      expect(links[0]).toContain('page=2');
      expect(links[1]).toMatch(/page=1[^>]*>; rel="prev"/);
      expect(links[1]).not.toMatch(/after=[^>]*>; rel="prev"/);
      expect(links[2]).not.toContain('rel="next"');
      // after alone: the boxes after that name, whatever page says.
      const after = await service.request('GET', '/api/organization/keyset/box?after=K-05&per_page=3&page=7', { token: t() });
      expect(after.body.map((b: { name: string }) => b.name)).toEqual(expected.slice(5, 8));
      expect((await service.request('GET', '/api/organization/keyset/box?after=no%2Fslash', { token: t() })).status).toBe(422);
      // X-Total-Count is every box of the list whichever way the page is reached: page=N (counted with the page),
      // a page past the end (no rows to count with) and a keyset page.
      for (const path of ['?per_page=4', '?page=3&per_page=4', '?page=9&per_page=4', '?after=K-05&per_page=3']) {
        const response = await service.request('GET', `/api/organization/keyset/box${path}`, { token: t() });
        expect(response.headers.get('x-total-count'), path).toBe(String(names.length));
      }
    });

    it('update with PUT or PATCH keeps what is not given', async () => {
      await service.request('POST', '/api/organization/acme/box', { token: t(), json: { name: 'upd', description: 'first', isPublic: true } });
      const patched = await service.request('PATCH', '/api/organization/acme/box/upd', { token: t(), json: { description: 'second' } });
      expect(patched.body).toMatchObject({ description: 'second', is_public: true });
      const empty = await service.request('PUT', '/api/organization/acme/box/upd', { token: t(), json: {} });
      expect(empty.status).toBe(422);
    });

    it("refuses organization names that would shadow the service's own paths", async () => {
      const response = await service.request('POST', '/api/organization', { token: t(), json: { name: 'api' } });
      expect(response.status).toBe(422);
      expect(response.body.errors[0]).toMatchObject({ pointer: '/name', rule: 'reserved' });
    });

    it('records box.deleted and deletes the objects of a deleted box', async () => {
      const path = { org: 'acme', box: 'short-lived', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
      await createBoxPath(service, t(), path);
      await uploadRaw(service, path, await makeBox(), { token: t() });
      const objects = (await service.storedObjects()).length;
      expect((await service.request('DELETE', '/api/organization/acme/box/short-lived', { token: t() })).status).toBe(200);
      expect((await service.storedObjects()).length).toBe(objects - 1);
      expect(await service.sql("select data from events where type = 'box.deleted'")).toEqual([{ data: { organization: 'acme', box: 'short-lived' } }]);
      expect(await service.sql('select * from storage_cleanup')).toEqual([]);
    });
  });

  describe('accounts', () => {
    it('sign-up checks the password rules (one entry per rule) and uniqueness', async () => {
      const weak = await service.request('POST', '/api/auth/signup', { json: { username: 'weak', email: 'weak@example.test', password: 'password' } });
      expect(weak.status).toBe(422);
      expect(weak.body.errors.map((e: { rule: string }) => e.rule).sort()).toEqual(['common_password', 'digit', 'uppercase']);
      const ok = await service.request('POST', '/api/auth/signup', { json: { username: 'newcomer', email: 'new@example.test', password: USER_PASSWORD } });
      expect(ok.status).toBe(201);
      expect(ok.body).toEqual({ message: expect.stringContaining('newcomer') });
      const again = await service.request('POST', '/api/auth/signup', { json: { username: 'NewComer', email: 'other@example.test', password: USER_PASSWORD } });
      expect(again.status).toBe(409);
      expect(again.body.errors[0].pointer).toBe('/username');
    });

    it("sign-in returns the seed's record; stayLoggedIn gives a longer session; a wrong password is 401", async () => {
      const short = await service.request('POST', '/api/auth/signin', { json: { username: 'newcomer', password: USER_PASSWORD } });
      expect(short.status).toBe(200);
      expect(short.body).toMatchObject({ username: 'newcomer', email: 'new@example.test', roles: ['user'], organization: null, organizations: [] });
      const long = await service.request('POST', '/api/auth/signin', { json: { username: 'newcomer', password: USER_PASSWORD, stayLoggedIn: true } });
      expect(new Date(long.body.expires_at).getTime()).toBeGreaterThan(new Date(short.body.expires_at).getTime() + 24 * 3600_000);
      const wrong = await service.request('POST', '/api/auth/signin', { json: { username: 'newcomer', password: 'Wrong-Passw0rd' } });
      expect(wrong.status).toBe(401);
      expect((await service.request('POST', '/api/auth/signin', { json: { username: 'nobody', password: 'Wrong-Passw0rd' } })).status).toBe(401);
    });

    it('a service account signs in with its username and key as the password', async () => {
      const created = await service.request('POST', '/api/service-accounts', { token: t(), json: { organization: 'acme', description: 'ci' } });
      expect(created.body.token).toMatch(/^bxy_sa_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
      const signIn = await service.request('POST', '/api/auth/signin', {
        json: { username: created.body.username, password: created.body.token, stayLoggedIn: true },
      });
      expect(signIn.status).toBe(200);
      expect(signIn.body).toMatchObject({ username: created.body.username, roles: ['service_account'], organization: 'acme' });
      expect((await service.request('POST', '/api/organization/acme/box', { token: signIn.body.access_token, json: { name: 'from-ci' } })).status).toBe(201);
      expect((await service.request('POST', '/api/auth/signin', { json: { username: 'someone-else', password: created.body.token } })).status).toBe(401);
      const [row] = await service.sql<{ key_sha256: string }>('select key_sha256 from service_accounts where username = $1', [created.body.username]);
      expect(row!.key_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(await service.sql('select * from service_accounts'))).not.toContain(created.body.token);
    });

    it('an expired service-account key is refused', async () => {
      const created = await service.request('POST', '/api/service-accounts', { token: t(), json: { organization: 'acme', expiration_days: 1 } });
      await service.sql("update service_accounts set expires_at = now() - interval '1 second' where id = $1", [created.body.id]);
      const response = await service.request('GET', '/api/user', { headers: { authorization: `Bearer ${created.body.token}` } });
      expect(response.status).toBe(401);
      expect(response.body.detail).toBe('Service-account key expired');
    });
  });

  describe('operations', () => {
    it('publishes the routes in /openapi.json, and route templates in /metrics on its own listener, not the public port', async () => {
      const spec = (await service.request('GET', '/openapi.json')).body;
      expect(Object.keys(spec.paths)).toEqual(
        expect.arrayContaining([
          '/api/organization/{org}/box',
          '/{org}/{box}',
          '/api/service-accounts',
          '/api/organization/{org}/box/{box}/version/{version}/provider/{provider}/architecture/{arch}/file/upload',
        ]),
      );
      const publicPort = await service.request('GET', '/metrics');
      expect(publicPort.status).toBe(404);
      expect(new URL(service.running.metricsUrl).port).not.toBe(new URL(service.url).port);
      const metrics = await (await fetch(service.running.metricsUrl)).text();
      expect(metrics).toContain('route="/api/organization/:org/box"');
      expect(metrics).not.toContain('route="/api/organization/acme/box"');
    });

    it('configuration errors name the key; defaults follow the contract', () => {
      const base = { database: { url: 'postgres://x/y' }, storage: { driver: 'local', root: '/tmp' }, session: { secret: 'x'.repeat(32) } };
      const config = boxRepositoryConfigSchema.parse(base);
      expect(config.server.port).toBe(3000);
      expect(config.server.tls.enabled).toBe(false);
      expect(config.uploads).toEqual({
        max_bytes: 10 * 1024 ** 3,
        stall_timeout_seconds: 60,
        abandoned_after_seconds: 24 * 3600,
        upload_url_ttl_seconds: 900,
        inspection: { max_unpacked_bytes: 64 * 1024 ** 3, max_expansion_ratio: 100, max_entries: 10_000 },
      });
      expect(config.download_links.ttl_seconds).toBe(300);
      expect(config.database.schema).toBe('box_repository');
      expect(config.admin.username).toBe('admin');
      expect(() => loadConfig(boxRepositoryConfigSchema, { env: { BOXYARD_UPLOADS__MAX_BYTES: '-1' }, defaults: base })).toThrow(/uploads\.max_bytes/);
      expect(() => loadConfig(boxRepositoryConfigSchema, { env: {}, defaults: { ...base, session: { secret: 'short' } } })).toThrow(ConfigError);
    });
  });
});

describe('boxyard serve box-repository (serviceDefinition.serve)', () => {
  it('starts from a YAML file and refuses a bad one, naming the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'boxyard-serve-'));
    const file = join(dir, 'config.yaml');
    const databaseUrl = await createTestDatabase('boxserve');
    await writeFile(
      file,
      [
        'server: {host: 127.0.0.1, port: 0}',
        'logging: {level: silent}',
        `database: {url: "${databaseUrl}"}`,
        `storage: {driver: local, root: "${dir}"}`,
        `session: {secret: "${'k'.repeat(40)}"}`,
        'admin: {password: Serve-Passw0rd}',
      ].join('\n') + '\n',
    );
    try {
      const running = await serviceDefinition.serve(file);
      try {
        expect(running.name).toBe('box-repository');
        const signIn = await fetch(`${running.url}/api/auth/signin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: 'Serve-Passw0rd' }),
        });
        expect(signIn.status).toBe(200);
      } finally {
        await running.close();
      }
      await writeFile(file, 'uploads: {max_bytes: "lots"}\n', { flag: 'a' });
      await expect(serviceDefinition.serve(file)).rejects.toThrow(/uploads\.max_bytes/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('boxyard dev (serviceDefinition.dev)', () => {
  it('creates the admin on first start, printing a generated password once, and keeps data across restarts', async () => {
    const home = await mkdtemp(join(tmpdir(), 'boxyard-dev-'));
    const databaseUrl = await createTestDatabase('boxdev');
    const secrets = new Map<string, string>();
    const context = {
      home,
      databaseUrl,
      adminPassword: undefined,
      secret: async (name: string) => secrets.get(name) ?? (secrets.set(name, `${name}-${'s'.repeat(40)}`), secrets.get(name)!),
    };
    const printed: string[] = [];
    const log = console.log;
    const previous = { port: process.env.BOXYARD_SERVER__PORT, level: process.env.BOXYARD_LOGGING__LEVEL };
    console.log = (...args: unknown[]) => void printed.push(args.join(' '));
    process.env.BOXYARD_SERVER__PORT = '0';
    process.env.BOXYARD_LOGGING__LEVEL = 'silent';
    try {
      const first = await serviceDefinition.dev(context);
      await first.close();
      const second = await serviceDefinition.dev(context);
      console.log = log;
      const banner = printed.filter((line) => line.includes('generated password'));
      expect(banner).toHaveLength(1);
      const password = /password: (\S+)/.exec(banner[0]!)![1]!;
      const signIn = await fetch(`${second.url}/api/auth/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password }),
      });
      expect(signIn.status).toBe(200);
      expect(second.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      await second.close();
    } finally {
      console.log = log;
      for (const [name, value] of [
        ['BOXYARD_SERVER__PORT', previous.port],
        ['BOXYARD_LOGGING__LEVEL', previous.level],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await rm(home, { recursive: true, force: true });
    }
  });
});
