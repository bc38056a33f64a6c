// Downloads and Vagrant metadata on the s3 driver, on each of the run's S3 servers (MinIO, SeaweedFS): byte ranges,
// a 302 to a presigned storage URL (download_links.redirect_to_storage) that curl follows with its Range, HEAD, ETag / If-None-Match / If-Range,
// Content-Disposition, download counts, every credential form for private boxes, signed links, and the metadata
// Vagrant reads (which versions, the order of architectures, absolute stable URLs, HEAD answers).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestBucket, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { makeBox, sha256 } from '../testing/boxes.ts';
import { archPath, createBoxPath, createOrganization, startTestService, uploadRaw, type BoxPath, type TestService } from '../testing/test-service.ts';

const run = promisify(execFile);

describe.each(s3Servers)('downloads and metadata (s3 driver on $server)', ({ server }) => {
  let service: TestService;
  let box: Buffer;
  let key: string;
  const publicPath: BoxPath = { org: 'acme', box: 'public', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
  const privatePath: BoxPath = { org: 'acme', box: 'private', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
  const fileUrl = (p: BoxPath, name = 'vagrant.box') => `/${p.org}/boxes/${p.box}/versions/${p.version}/providers/${p.provider}/${p.arch}/${name}`;
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => fetch(`${service.url}${path}`, { method, headers });
  const bytes = async (response: Response) => Buffer.from(await response.arrayBuffer());

  beforeAll(async () => {
    service = await startTestService({ storage: 's3', bucket: await createTestBucket('boxrepo', s3Server(server)) });
    await createOrganization(service, 'acme');
    box = await makeBox({ gzip: false, fillerBytes: 100_000 });
    for (const [path, isPublic] of [
      [publicPath, true],
      [privatePath, false],
    ] as const) {
      await createBoxPath(service, service.adminToken, path, { isPublic });
      expect((await uploadRaw(service, path, box, { token: service.adminToken })).status).toBe(201);
    }
    const created = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } });
    key = created.body.token;
  });
  afterAll(async () => service?.close());

  describe('a file download', () => {
    it('whole: 200 with length, strong ETag (the sha256), Accept-Ranges, Content-Disposition', async () => {
      const response = await get(fileUrl(publicPath));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-length')).toBe(String(box.length));
      expect(response.headers.get('etag')).toBe(`"${sha256(box)}"`);
      expect(response.headers.get('accept-ranges')).toBe('bytes');
      expect(response.headers.get('content-type')).toBe('application/octet-stream');
      expect(response.headers.get('content-disposition')).toBe('attachment; filename="vagrant.box"');
      expect(response.headers.get('last-modified')).toBeTruthy();
      expect((await bytes(response)).equals(box)).toBe(true);
    });

    it('one range: 206 with Content-Range; an open-ended and a suffix range', async () => {
      const first = await get(fileUrl(publicPath), { range: 'bytes=0-99' });
      expect(first.status).toBe(206);
      expect(first.headers.get('content-range')).toBe(`bytes 0-99/${box.length}`);
      expect(first.headers.get('content-length')).toBe('100');
      expect((await bytes(first)).equals(box.subarray(0, 100))).toBe(true);
      const rest = await get(fileUrl(publicPath), { range: 'bytes=1000-' });
      expect(rest.status).toBe(206);
      expect((await bytes(rest)).equals(box.subarray(1000))).toBe(true);
      const tail = await get(fileUrl(publicPath), { range: 'bytes=-10' });
      expect((await bytes(tail)).equals(box.subarray(box.length - 10))).toBe(true);
    });

    it('a range past the end: 416 with `Content-Range: bytes */size`, in problem-details form', async () => {
      const response = await get(fileUrl(publicPath), { range: `bytes=${box.length}-` });
      expect(response.status).toBe(416);
      expect(response.headers.get('content-range')).toBe(`bytes */${box.length}`);
      expect((await response.json()) as object).toMatchObject({ status: 416, type: 'https://boxyard.io/problems/range-not-satisfiable' });
    });

    it('several ranges, or an If-Range that no longer matches: the whole file', async () => {
      const multi = await get(fileUrl(publicPath), { range: 'bytes=0-1,5-6' });
      expect(multi.status).toBe(200);
      expect((await bytes(multi)).length).toBe(box.length);
      const changed = await get(fileUrl(publicPath), { range: 'bytes=0-9', 'if-range': '"something-else"' });
      expect(changed.status).toBe(200);
      await changed.arrayBuffer();
      const same = await get(fileUrl(publicPath), { range: 'bytes=0-9', 'if-range': `"${sha256(box)}"` });
      expect(same.status).toBe(206);
      await same.arrayBuffer();
    });

    it('If-None-Match with the ETag: 304 without a body', async () => {
      const response = await get(fileUrl(publicPath), { 'if-none-match': `"${sha256(box)}"` });
      expect(response.status).toBe(304);
      expect(await response.text()).toBe('');
    });

    it('HEAD: the headers of a GET and no body', async () => {
      const response = await get(fileUrl(publicPath), {}, 'HEAD');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-length')).toBe(String(box.length));
      expect(response.headers.get('etag')).toBe(`"${sha256(box)}"`);
      expect(await response.text()).toBe('');
    });

    it('unknown file names and paths: 404 (an unknown organization: 401 anonymous, as a private one would be)', async () => {
      expect((await get(fileUrl(publicPath, 'other.box'))).status).toBe(404);
      expect((await get(fileUrl({ ...publicPath, version: '9.9.9' }))).status).toBe(404);
      expect((await get(fileUrl({ ...publicPath, org: 'nobody' }))).status).toBe(401);
    });

    it('counts downloads that start at byte 0, not resumed ones', async () => {
      const path = { ...publicPath, box: 'counted' };
      await createBoxPath(service, service.adminToken, path, { isPublic: true });
      await uploadRaw(service, path, box, { token: service.adminToken });
      await (await get(fileUrl(path))).arrayBuffer();
      await (await get(fileUrl(path), { range: 'bytes=0-' })).arrayBuffer();
      await (await get(fileUrl(path), { range: 'bytes=500-' })).arrayBuffer();
      await get(fileUrl(path), {}, 'HEAD');
      await expect.poll(async () => (await service.request('GET', `${archPath(path)}/file`)).body.download_count).toBe(2);
    });
  });

  describe('redirected to storage (download_links.redirect_to_storage)', () => {
    it('answers 302 to a presigned URL of the S3 server, which curl follows with its Range and reads byte for byte', async () => {
      const redirecting = await startTestService({
        storage: 's3',
        bucket: service.bucket!,
        databaseUrl: service.databaseUrl,
        config: { download_links: { redirect_to_storage: true, storage_url_ttl_seconds: 60 } },
      });
      const dir = await mkdtemp(join(tmpdir(), 'boxrepo-redirect-'));
      try {
        const answer = await fetch(`${redirecting.url}${fileUrl(publicPath)}`, { redirect: 'manual' });
        expect(answer.status).toBe(302);
        const location = new URL(answer.headers.get('location')!);
        expect(location.origin).toBe(new URL(service.bucket!.endpoint).origin);
        expect(location.searchParams.get('X-Amz-Expires')).toBe('60');
        const out = join(dir, 'part');
        const ranged = await run('curl', [
          '-sS',
          '-L',
          '-r',
          '1000-1999',
          '-o',
          out,
          '-w',
          '%{http_code} %{num_redirects}',
          `${redirecting.url}${fileUrl(publicPath)}`,
        ]);
        expect(ranged.stdout).toBe('206 1');
        expect((await readFile(out)).equals(box.subarray(1000, 2000))).toBe(true);
        await run('curl', ['-sSfL', '-o', out, `${redirecting.url}${fileUrl(publicPath)}`]);
        expect(sha256(await readFile(out))).toBe(sha256(box));
        // A private file needs credentials before the redirect, not after.
        expect((await fetch(`${redirecting.url}${fileUrl(privatePath)}`, { redirect: 'manual' })).status).toBe(401);
      } finally {
        await redirecting.running.close(); // not close(): that empties the bucket the other tests read
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('a private file', () => {
    it('is refused without credentials (401 with WWW-Authenticate) and with wrong ones', async () => {
      const anonymous = await get(fileUrl(privatePath));
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      expect((await anonymous.json()) as object).toMatchObject({ type: 'https://boxyard.io/problems/authentication', errors: [] });
      expect((await get(fileUrl(privatePath), { authorization: `Bearer ${key}x` })).status).toBe(401);
      expect((await get(fileUrl(privatePath), { authorization: 'Bearer bxy_sa_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })).status).toBe(
        401,
      );
      expect((await get(fileUrl(privatePath), { 'x-access-token': 'not-a-jwt' })).status).toBe(401);
    });

    it("is served with a session token, a key as Bearer, as ?access_token=, as the Basic password, or a user's Basic password", async () => {
      const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      for (const [how, response] of [
        ['session', await get(fileUrl(privatePath), { 'x-access-token': service.adminToken })],
        ['bearer key', await get(fileUrl(privatePath), { authorization: `Bearer ${key}` })],
        ['bearer session', await get(fileUrl(privatePath), { authorization: `Bearer ${service.adminToken}` })],
        ['access_token', await get(`${fileUrl(privatePath)}?access_token=${key}`)],
        ['basic key', await get(fileUrl(privatePath), { authorization: basic('vagrant', key) })],
        ['basic password', await get(fileUrl(privatePath), { authorization: basic('admin', 'Admin-Passw0rd-For-Tests') })],
      ] as const) {
        expect(response.status, how).toBe(200);
        expect((await bytes(response)).equals(box), how).toBe(true);
      }
    });

    it('is served through a signed link without other credentials, for that file only, until it expires', async () => {
      const link = await service.request('POST', `${archPath(privatePath)}/file/get-download-link`, { token: service.adminToken });
      expect(link.status).toBe(200);
      expect(new Date(link.body.expires_at).getTime()).toBeGreaterThan(Date.now());
      const url = new URL(link.body.download_url);
      expect(url.pathname).toBe(fileUrl(privatePath));
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect((await bytes(response)).equals(box)).toBe(true);
      // The same signature on another file's URL proves nothing: that URL is answered by the read rules (a public
      // file is served as to anyone, and the bogus link does not turn that into a 401).
      const other = await fetch(`${service.url}${fileUrl({ ...privatePath, box: 'public' })}${url.search}`);
      expect(other.status).toBe(200);
      await other.arrayBuffer();
      url.searchParams.set('signature', `${url.searchParams.get('signature')!.slice(0, -2)}AA`);
      expect((await fetch(url)).status).toBe(401);
      const fileId = (await service.request('GET', `${archPath(privatePath)}/file`, { token: service.adminToken })).body.id;
      const expired = service.running.ctx.downloadLinks.sign(fileId, -60);
      const expiredResponse = await get(`${fileUrl(privatePath)}?expires=${expired.expires}&signature=${expired.signature}`);
      expect(expiredResponse.status).toBe(401);
      expect(((await expiredResponse.json()) as { detail: string }).detail).toBe('Download link expired');
    });
    it('a forged link tells an anonymous caller nothing about private names: the same answer as without one', async () => {
      const forged = '?expires=9999999999&signature=AAAA';
      const paths = {
        'existing file': fileUrl(privatePath),
        'missing file name': fileUrl(privatePath).replace(/\/[^/]*$/, '/nope.box'),
        'missing version': fileUrl({ ...privatePath, version: '9.9.9' }),
        'missing architecture': fileUrl({ ...privatePath, arch: 'riscv64' }),
      };
      const answers = new Set<string>();
      for (const [what, path] of Object.entries(paths)) {
        const [withLink, without] = [await get(`${path}${forged}`), await get(path)];
        const [a, b] = [
          { status: withLink.status, body: await withLink.text() },
          { status: without.status, body: await without.text() },
        ];
        expect(a.status, what).toBe(b.status);
        expect(JSON.parse(a.body).detail, what).toBe(JSON.parse(b.body).detail);
        answers.add(`${a.status} ${JSON.parse(a.body).detail}`);
      }
      // Private paths below the box all answer alike (before: 404 for what does not exist, 401 for what does).
      expect([...answers]).toHaveLength(1);
      expect([...answers][0]).toMatch(/^401 /);
    });
  });

  describe('Vagrant metadata', () => {
    const multi: BoxPath = { org: 'acme', box: 'multi', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    beforeAll(async () => {
      const t = service.adminToken;
      await createBoxPath(service, t, multi, { isPublic: true, description: 'Many versions' });
      // 1.0.0: virtualbox amd64 (default, created first) + arm64, libvirt amd64.
      await uploadRaw(service, multi, box, { token: t });
      await createBoxPath(service, t, { ...multi, arch: 'arm64' });
      await uploadRaw(service, { ...multi, arch: 'arm64' }, await makeBox({ fillerBytes: 10 }), { token: t });
      await createBoxPath(service, t, { ...multi, provider: 'libvirt' });
      await uploadRaw(service, { ...multi, provider: 'libvirt' }, await makeBox({ provider: 'libvirt' }), { token: t });
      // 1.1.0 has no file; 2.0.0 is unreleased; 0.9.0 is revoked; 1.10.0 is active (sorts above 1.1.0 numerically).
      for (const [version, status] of [
        ['1.1.0', undefined],
        ['2.0.0', 'unreleased'],
        ['0.9.0', 'revoked'],
        ['1.10.0', undefined],
      ] as const) {
        await createBoxPath(service, t, { ...multi, version });
        if (version !== '1.1.0') await uploadRaw(service, { ...multi, version }, box, { token: t });
        if (status) await service.request('PATCH', `/api/organization/acme/box/multi/version/${version}`, { token: t, json: { status } });
      }
    });

    it('lists active versions with files, newest first; each architecture with the sha256; the default architecture last', async () => {
      const response = await service.request('GET', '/acme/multi', { headers: { 'user-agent': 'curl/8.0' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const metadata = response.body;
      expect(metadata.name).toBe('acme/multi');
      expect(metadata.description).toBe('Many versions');
      expect(metadata.versions.map((v: { version: string }) => v.version)).toEqual(['1.10.0', '1.0.0']);
      const providers = metadata.versions[1].providers;
      expect(
        providers.map((p: { name: string; architecture: string; default_architecture: boolean }) => [p.name, p.architecture, p.default_architecture]),
      ).toEqual([
        ['libvirt', 'amd64', true],
        ['virtualbox', 'arm64', false],
        ['virtualbox', 'amd64', true],
      ]);
      expect(providers[2]).toEqual({
        name: 'virtualbox',
        architecture: 'amd64',
        default_architecture: true,
        checksum_type: 'sha256',
        checksum: sha256(box),
        file_size: box.length,
        url: `${service.url}${fileUrl(multi)}`,
      });
    });

    it('moving the default architecture moves it to the end', async () => {
      const t = service.adminToken;
      expect((await service.request('PATCH', archPath({ ...multi, arch: 'arm64' }), { token: t, json: { default_box: true } })).body.default_box).toBe(true);
      const providers = (await service.request('GET', '/api/v2/vagrant/acme/multi')).body.versions[1].providers;
      expect(providers.slice(1).map((p: { architecture: string; default_architecture: boolean }) => [p.architecture, p.default_architecture])).toEqual([
        ['amd64', false],
        ['arm64', true],
      ]);
      await service.request('PATCH', archPath(multi), { token: t, json: { defaultBox: true } });
    });

    it('is the same at the three paths, with URLs on the host the client asked for, stable across requests', async () => {
      const paths = ['/acme/multi', '/api/v2/vagrant/acme/multi', '/api/organization/acme/box/multi/metadata'];
      const bodies = await Promise.all(paths.map(async (p) => (await service.request('GET', p)).text));
      expect(new Set(bodies).size).toBe(1);
      const viaLocalhost = await fetch(`${service.url.replace('127.0.0.1', 'localhost')}/acme/multi`);
      expect(((await viaLocalhost.json()) as { versions: { providers: { url: string }[] }[] }).versions[0]!.providers[0]!.url).toMatch(
        /^http:\/\/localhost:\d+\/acme\/boxes\/multi\//,
      );
    });

    it('HEAD answers like Vagrant needs: 200 application/json for a box, 401 anonymous for an unknown or a private one, 404 unknown with credentials', async () => {
      const head = (path: string, headers: Record<string, string> = {}) =>
        get(path, { accept: 'application/json', 'user-agent': 'Vagrant/2.3.4', ...headers }, 'HEAD');
      const known = await head('/acme/multi');
      expect(known.status).toBe(200);
      expect(known.headers.get('content-type')).toMatch(/^application\/json/);
      // Anonymous: unknown and private look alike (existence hidden); with credentials, unknown is 404.
      expect((await head('/acme/no-such-box')).status).toBe(401);
      expect((await head('/nobody/multi')).status).toBe(401);
      expect((await head('/acme/private')).status).toBe(401);
      expect((await head('/acme/private', { authorization: `Bearer ${key}` })).status).toBe(200);
      expect((await head('/acme/no-such-box', { authorization: `Bearer ${key}` })).status).toBe(404);
      expect((await head('/api/v2/vagrant/acme/no-such-box')).status).toBe(401);
      expect((await head('/api/v2/vagrant/acme/no-such-box', { authorization: `Bearer ${key}` })).status).toBe(404);
    });

    it("does not shadow the service's own paths", async () => {
      expect((await get('/health')).status).toBe(200);
      expect((await get('/health/ready')).status).toBe(200);
      const unknownApi = await get('/api/nothing-here');
      expect(unknownApi.status).toBe(404);
      expect(((await unknownApi.json()) as { detail: string }).detail).toBe('No route for GET /api/nothing-here');
      expect((await get('/api-docs/json')).status).toBe(200);
    });
  });
});
