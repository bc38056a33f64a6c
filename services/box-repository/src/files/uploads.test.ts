// Uploads on the local driver: both forms, the client's checksum (sha256 and other types), the box-format check,
// size limit, stall time-out, a cut-off upload, replacement, storage full, and the error statuses of the seed's
// table. After every refused upload: no file row, no object (the directory is checked), nothing queued.
// On the s3 driver: a raw upload's bytes go to storage as they arrive (its Content-Length is known), and a
// multi-part box comes back whole.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, incompleteUploads, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { uploadInTwoParts } from '@boxyard/test/harness/upload-in-two-parts.ts';
import { makeBox, makeGzipBomb, md5, sha256 } from '../testing/boxes.ts';
import { archPath, createBoxPath, createOrganization, startTestService, uploadRaw, type BoxPath, type TestService } from '../testing/test-service.ts';

const KiB = 1024;
const MAX_BYTES = 512 * KiB;

describe('uploads', () => {
  let service: TestService;
  let counter = 0;
  const token = () => service.adminToken;

  async function freshPath(versionStatus?: string): Promise<BoxPath> {
    const path = { org: 'acme', box: `box-${++counter}`, version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, token(), path);
    if (versionStatus)
      await service.request('PATCH', `/api/organization/acme/box/${path.box}/version/1.0.0`, { token: token(), json: { status: versionStatus } });
    return path;
  }

  const fileRows = async () => (await service.sql<{ n: number }>('select count(*)::int as n from files'))[0]!.n;

  /** What a refused upload must leave: the same objects and rows as before, nothing queued for clean-up. */
  async function expectNothingLeft(before: { objects: string[]; rows: number }) {
    await expect.poll(async () => (await service.storedObjects()).sort(), { timeout: 20_000 }).toEqual(before.objects.sort());
    expect(await fileRows()).toBe(before.rows);
    expect(await service.sql('select * from storage_cleanup')).toEqual([]);
  }
  const snapshot = async () => ({ objects: await service.storedObjects(), rows: await fileRows() });

  beforeAll(async () => {
    service = await startTestService({ config: { uploads: { max_bytes: MAX_BYTES, stall_timeout_seconds: 3 } } });
    await createOrganization(service, 'acme');
  });
  afterAll(async () => service?.close());

  describe('accepted', () => {
    it('multipart: stores the box, computes its sha256, verifies the checksum fields sent before the file part', async () => {
      const path = await freshPath();
      const box = await makeBox();
      const form = new FormData();
      form.append('checksum_type', 'sha256');
      form.append('checksum', sha256(box));
      form.append('file', new Blob([box]), 'ubuntu-24.04.box');
      const response = await service.request('POST', `${archPath(path)}/file`, { token: token(), body: form });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toMatchObject({
        file_name: 'ubuntu-24.04.box',
        size: box.length,
        sha256: sha256(box),
        checksum: sha256(box),
        checksum_type: 'sha256',
        download_count: 0,
      });
      const info = await service.request('GET', `${archPath(path)}/file`, { token: token() });
      expect(info.body).toEqual(response.body);
      const downloaded = Buffer.from(await (await fetch(response.body.download_url, { headers: { 'x-access-token': token() } })).arrayBuffer());
      expect(downloaded.equals(box)).toBe(true);
    });

    it('raw body: X-File-Name, X-Checksum; a plain tar; metadata.json after other entries', async () => {
      const path = await freshPath();
      const box = await makeBox({
        gzip: false,
        leading: [
          { name: 'box.ovf', content: Buffer.from('<ovf/>') },
          { name: 'disk.vmdk', content: Buffer.alloc(20 * KiB, 7) },
        ],
      });
      const response = await uploadRaw(service, path, box, {
        token: token(),
        headers: { 'x-file-name': 'plain.box', 'x-checksum': sha256(box), 'x-checksum-type': 'SHA256' },
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toMatchObject({ file_name: 'plain.box', size: box.length, sha256: sha256(box) });
    });

    it('verifies md5 (and any supported type) while streaming, keeps it and the server-computed sha256', async () => {
      const path = await freshPath();
      const box = await makeBox();
      const response = await uploadRaw(service, path, box, { token: token(), query: `checksum=${md5(box)}&checksum_type=md5` });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toMatchObject({ checksum_type: 'md5', checksum: md5(box), sha256: sha256(box) });
      // Vagrant is always given the sha256.
      const metadata = await service.request('GET', `/acme/${path.box}`, { token: token() });
      expect(metadata.body.versions[0].providers[0]).toMatchObject({ checksum_type: 'sha256', checksum: sha256(box) });
    });

    it('records box.uploaded in the events outbox', async () => {
      const path = await freshPath();
      const box = await makeBox();
      expect((await uploadRaw(service, path, box, { token: token() })).status).toBe(201);
      const events = await service.sql<{ type: string; data: Record<string, unknown> }>(
        "select type, data from events where type = 'box.uploaded' and data->>'box' = $1",
        [path.box],
      );
      expect(events).toEqual([
        {
          type: 'box.uploaded',
          data: expect.objectContaining({
            organization: 'acme',
            box: path.box,
            version: '1.0.0',
            provider: 'virtualbox',
            architecture: 'amd64',
            sha256: sha256(box),
            size: box.length,
          }),
        },
      ]);
    });
  });

  describe('multipart fields after the file part', () => {
    const formWith = (entries: [string, string | [Buffer, string]][]) => {
      const form = new FormData();
      for (const [name, value] of entries) {
        if (typeof value === 'string') form.append(name, value);
        else form.append(name, new Blob([value[0]]), value[1]);
      }
      return form;
    };

    it('a sha256 checksum and a file name sent after the file are applied and verified', async () => {
      const path = await freshPath();
      const box = await makeBox();
      const response = await service.request('POST', `${archPath(path)}/file`, {
        token: token(),
        body: formWith([
          ['file', [box, 'x.box']],
          ['checksum', sha256(box)],
          ['file_name', 'late-name.box'],
        ]),
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toMatchObject({ file_name: 'late-name.box', checksum: sha256(box), checksum_type: 'sha256' });
    });

    it('a wrong sha256 after the file: 422, nothing stored (was: accepted unverified)', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const response = await service.request('POST', `${archPath(path)}/file`, {
        token: token(),
        body: formWith([
          ['file', [await makeBox(), 'x.box']],
          ['checksum', sha256('other')],
        ]),
      });
      expect(response.status).toBe(422);
      expect(response.body.errors[0]).toMatchObject({ pointer: '/checksum', rule: 'checksum', params: { checksum_type: 'sha256' } });
      await expectNothingLeft(before);
    });

    it('an md5 after the file cannot be verified: 422 saying to send it first, nothing stored', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const box = await makeBox();
      const response = await service.request('POST', `${archPath(path)}/file`, {
        token: token(),
        body: formWith([
          ['file', [box, 'x.box']],
          ['checksum_type', 'md5'],
          ['checksum', md5(box)],
        ]),
      });
      expect(response.status).toBe(422);
      expect(response.body.errors[0]).toMatchObject({ pointer: '/checksum_type', rule: 'field_order' });
      expect(response.body.detail).toMatch(/before the part `file`/);
      await expectNothingLeft(before);
    });

    it('a second file part after a stored file: refused and the first file is not kept (was: stored, then an error)', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const response = await service.request('POST', `${archPath(path)}/file`, {
        token: token(),
        body: formWith([
          ['file', [await makeBox(), 'a.box']],
          ['file', [await makeBox(), 'b.box']],
        ]),
      });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      await expectNothingLeft(before);
      expect((await service.request('GET', `${archPath(path)}/file`, { token: token() })).status).toBe(404);
    });

    it('too many fields after the file: refused, and with replace=true the old file is still there (was: replaced, then an error)', async () => {
      const path = await freshPath('active');
      const old = await makeBox({ fillerBytes: 7 });
      const first = await uploadRaw(service, path, old, { token: token(), query: 'replace=true' });
      expect(first.status, first.text).toBe(201);
      const before = await snapshot();
      const fields: [string, string][] = Array.from({ length: 25 }, (_, i) => [`extra${i}`, 'x']);
      const response = await service.request('POST', `${archPath(path)}/file?replace=true`, {
        token: token(),
        body: formWith([['file', [await makeBox(), 'new.box']], ...fields]),
      });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      await expectNothingLeft(before);
      const info = await service.request('GET', `${archPath(path)}/file`, { token: token() });
      expect(info.body.sha256).toBe(sha256(old));
    });
  });

  describe('replacing a file', () => {
    it('of a released version needs replace=true, swaps in one step and deletes the old object', async () => {
      const path = await freshPath();
      const first = await makeBox({ fillerBytes: 1000 });
      const second = await makeBox({ fillerBytes: 2000 });
      expect((await uploadRaw(service, path, first, { token: token() })).status).toBe(201);
      const before = await snapshot();
      const refused = await uploadRaw(service, path, second, { token: token() });
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toContain('replace=true');
      await expectNothingLeft(before);

      const replaced = await uploadRaw(service, path, second, { token: token(), query: 'replace=true' });
      expect(replaced.status, replaced.text).toBe(200);
      expect(replaced.body.sha256).toBe(sha256(second));
      expect((await service.storedObjects()).length).toBe(before.objects.length); // the old object is gone
      const downloaded = Buffer.from(await (await fetch(replaced.body.download_url, { headers: { 'x-access-token': token() } })).arrayBuffer());
      expect(downloaded.equals(second)).toBe(true);
      const metadata = await service.request('GET', `/api/organization/acme/box/${path.box}/metadata`, { token: token() });
      expect(metadata.body.versions[0].providers[0].checksum).toBe(sha256(second));
    });

    it('of an unreleased version is allowed without replace=true', async () => {
      const path = await freshPath('unreleased');
      expect((await uploadRaw(service, path, await makeBox(), { token: token() })).status).toBe(201);
      expect((await uploadRaw(service, path, await makeBox({ fillerBytes: 10 }), { token: token() })).status).toBe(200);
    });
  });

  describe('refused, leaving nothing behind', () => {
    it('a sha256 that does not match: 422 pointing at /checksum', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const box = await makeBox();
      const response = await uploadRaw(service, path, box, { token: token(), headers: { 'x-checksum': sha256('something else') } });
      expect(response.status).toBe(422);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({
        type: 'https://boxyard.io/problems/validation',
        status: 422,
        errors: [{ pointer: '/checksum', rule: 'checksum', params: { checksum_type: 'sha256', actual: sha256(box) } }],
      });
      await expectNothingLeft(before);
      expect((await service.request('GET', `${archPath(path)}/file`, { token: token() })).status).toBe(404);
    });

    it('an md5 that does not match (multipart): 422, nothing stored', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const form = new FormData();
      form.append('checksumType', 'md5');
      form.append('checksum', md5('other'));
      form.append('file', new Blob([await makeBox()]), 'vagrant.box');
      const response = await service.request('POST', `${archPath(path)}/file`, { token: token(), body: form });
      expect(response.status).toBe(422);
      expect(response.body.errors[0]).toMatchObject({ pointer: '/checksum', rule: 'checksum', params: { checksum_type: 'md5' } });
      await expectNothingLeft(before);
    });

    it('an unsupported checksum type or a malformed checksum: 422 before anything is read', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const crc = await uploadRaw(service, path, await makeBox(), { token: token(), query: 'checksum=abcd&checksum_type=crc32' });
      expect(crc.status).toBe(422);
      expect(crc.body.errors).toEqual([expect.objectContaining({ pointer: '/checksum_type', rule: 'enum' })]);
      const short = await uploadRaw(service, path, await makeBox(), { token: token(), query: 'checksum=abcd' });
      expect(short.status).toBe(422);
      expect(short.body.errors).toEqual([expect.objectContaining({ pointer: '/checksum', rule: 'pattern' })]);
      await expectNothingLeft(before);
    });

    const notBoxes: [string, () => Promise<Buffer>, RegExp][] = [
      ['random bytes', async () => Buffer.from('this is not a box at all, just some text that is long enough to look at'.repeat(20)), /not a tar archive/],
      ['a zip archive', async () => Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(600)]), /zip archive/],
      ['a tar without metadata.json', () => makeBox({ metadata: null }), /no metadata\.json/],
      ['metadata.json that is not JSON', () => makeBox({ metadata: '{"provider": virtualbox' }), /not valid JSON/],
      ['gzip of something that is not a tar', async () => (await import('node:zlib')).gzipSync(Buffer.alloc(4096, 'x')), /gzip'd data is not a tar archive/],
      ['a gzip stream cut before metadata.json', async () => (await makeBox({ fillerBytes: 20 * KiB })).subarray(0, 20), /gzip stream is corrupt/],
      ['an empty body', async () => Buffer.alloc(0), /empty/],
    ];
    for (const [name, make, message] of notBoxes) {
      it(`${name}: 422 saying it is not a box`, async () => {
        const path = await freshPath();
        const before = await snapshot();
        const response = await uploadRaw(service, path, await make(), { token: token() });
        expect(response.status, response.text).toBe(422);
        expect(response.body.errors).toEqual([expect.objectContaining({ pointer: '/file', rule: 'box_format' })]);
        expect(response.body.detail).toMatch(message);
        await expectNothingLeft(before);
      });
    }

    it('a gzip bomb (256 MiB of zeros in 0.3 MB before metadata.json): 422 at the expansion limit, nothing stored (was: inflated whole and stored)', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const bomb = await makeGzipBomb(256);
      expect(bomb.length).toBeLessThan(MAX_BYTES);
      const response = await uploadRaw(service, path, bomb, { token: token() });
      expect(response.status, response.text).toBe(422);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({
        type: 'https://boxyard.io/problems/validation',
        status: 422,
        errors: [{ pointer: '/file', rule: 'box_limit', params: { limit: 'uploads.inspection.max_expansion_ratio', max: 100 } }],
      });
      expect(response.body.detail).toMatch(/expands more than 100 times/);
      await expectNothingLeft(before);
    });

    it('larger than uploads.max_bytes: 413 (declared length, streamed without length, multipart)', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const big = await makeBox({ gzip: false, fillerBytes: MAX_BYTES });
      const declared = await uploadRaw(service, path, big, { token: token() });
      expect(declared.status).toBe(413);
      expect(declared.body).toMatchObject({ type: 'https://boxyard.io/problems/payload-too-large', status: 413, errors: [] });
      // Without Content-Length the limit is enforced while streaming.
      const streamed = await service.request('POST', `${archPath(path)}/file/upload`, {
        token: token(),
        headers: { 'content-type': 'application/octet-stream' },
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(big);
            controller.close();
          },
        }),
      });
      expect(streamed.status).toBe(413);
      const form = new FormData();
      form.append('file', new Blob([big]), 'vagrant.box');
      const multipart = await service.request('POST', `${archPath(path)}/file`, { token: token(), body: form });
      expect(multipart.status).toBe(413);
      await expectNothingLeft(before);
    });

    it('a client that stalls past uploads.stall_timeout_seconds: 408, then the connection is closed', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const box = await makeBox({ gzip: false, fillerBytes: 100 * KiB });
      const request = httpRequest(`${service.url}${archPath(path)}/file/upload`, {
        method: 'POST',
        headers: { 'x-access-token': token(), 'content-type': 'application/octet-stream', 'content-length': String(box.length) },
      });
      request.write(box.subarray(0, 20 * KiB)); // ... and then nothing more
      const [response] = (await once(request, 'response')) as [IncomingMessage];
      let text = '';
      for await (const chunk of response) text += chunk;
      request.destroy();
      expect(response.statusCode).toBe(408);
      expect(response.headers.connection).toBe('close');
      expect(JSON.parse(text)).toMatchObject({ type: 'https://boxyard.io/problems/timeout', status: 408, errors: [] });
      await expectNothingLeft(before);
    });

    it('a cut-off upload (the client disconnects mid-body): no row, no object', async () => {
      const path = await freshPath();
      const before = await snapshot();
      const box = await makeBox({ gzip: false, fillerBytes: 300 * KiB });
      const url = new URL(`${service.url}${archPath(path)}/file/upload`);
      const socket = connect(Number(url.port), url.hostname);
      await once(socket, 'connect');
      socket.write(
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nx-access-token: ${token()}\r\ncontent-type: application/octet-stream\r\ncontent-length: ${box.length}\r\n\r\n`,
      );
      socket.write(box.subarray(0, 100 * KiB));
      // Wait until the service is storing it (a temporary file exists), then go away.
      await expect.poll(async () => (await service.storedObjects()).some((key) => key.startsWith('.tmp/')), { timeout: 20_000 }).toBe(true);
      socket.destroy();
      await expectNothingLeft(before);
      expect((await service.request('GET', `${archPath(path)}/file`, { token: token() })).status).toBe(404);
    });

    it('multipart route without multipart/form-data: 415', async () => {
      const path = await freshPath();
      const response = await service.request('POST', `${archPath(path)}/file`, { token: token(), json: { file: 'no' } });
      expect(response.status).toBe(415);
      expect(response.body).toMatchObject({ type: 'https://boxyard.io/problems/unsupported-media-type', errors: [] });
    });

    it('a database failure after the bytes are stored: 500 without details, and the object is deleted', async () => {
      const path = await freshPath();
      const before = await snapshot();
      await service.sql('alter table events rename to events_unavailable');
      try {
        const response = await uploadRaw(service, path, await makeBox(), { token: token() });
        expect(response.status).toBe(500);
        expect(response.body).toEqual({
          type: 'https://boxyard.io/problems/internal',
          title: 'Internal server error',
          status: 500,
          detail: 'Internal server error',
          instance: `${archPath(path)}/file/upload`,
          errors: [],
        });
      } finally {
        await service.sql('alter table events_unavailable rename to events');
      }
      await expectNothingLeft(before);
    });
  });

  describe('storage full', () => {
    let mountPoint: string | undefined;
    let full: TestService | undefined;
    beforeAll(async () => {
      // A real full filesystem: a 1 MiB tmpfs (needs root, as the project's machines and CI run).
      const dir = await mkdtemp(join(tmpdir(), 'boxrepo-full-'));
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
        mountPoint = dir;
      } catch {
        await rm(dir, { recursive: true, force: true });
        return;
      }
      full = await startTestService({ localRoot: mountPoint, config: { uploads: { max_bytes: 64 * 1024 * 1024 } } });
      await createOrganization(full, 'acme');
    });
    afterAll(async () => {
      await full?.close();
      if (mountPoint) {
        execFileSync('umount', [mountPoint]);
        await rm(mountPoint, { recursive: true, force: true });
      }
    });

    it('507 in problem-details form, and the partial upload is removed', async (context) => {
      if (!full) return context.skip('mounting a tmpfs needs root');
      const path = { org: 'acme', box: 'huge', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
      await createBoxPath(full, full.adminToken, path);
      const response = await uploadRaw(full, path, await makeBox({ gzip: false, fillerBytes: 2 * 1024 * 1024 }), { token: full.adminToken });
      expect(response.status).toBe(507);
      expect(response.body).toMatchObject({ type: 'https://boxyard.io/problems/insufficient-storage', status: 507, errors: [] });
      expect(await full.storedObjects()).toEqual([]);
      expect(await full.sql('select * from files')).toEqual([]);
    });
  });
});

describe.each(s3Servers)('uploads on the s3 driver on $server', ({ server }) => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ storage: 's3', bucket: await createTestBucket('boxrepo', s3Server(server)) });
    await createOrganization(service, 'acme');
  });
  afterAll(async () => service?.close());

  it('a raw upload with a Content-Length streams into storage as it arrives, not a 16 MiB part at a time, and comes back whole', async () => {
    const MiB = 1024 * KiB;
    const path = { org: 'acme', box: 'streamed', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, service.adminToken, path);
    const box = await makeBox({ gzip: false, fillerBytes: 40 * MiB }); // three parts of 16 MiB (the last one short)
    const headers = { 'x-access-token': service.adminToken, 'content-type': 'application/octet-stream' };
    const answer = await uploadInTwoParts(`${service.url}${archPath(path)}/file/upload`, headers, box, 4 * MiB, async () => {
      // A quarter of the first part sent: its PUT to storage is already under way (buffering would wait for 16 MiB).
      await expect.poll(() => incompleteUploads(service.bucket!), { timeout: 20_000 }).toHaveLength(1);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(await incompleteUploads(service.bucket!)).toEqual([]);
    const info = await service.request('GET', `${archPath(path)}/file`, { token: service.adminToken });
    expect(info.body).toMatchObject({ size: box.length, sha256: sha256(box) });
    const downloaded = Buffer.from(await (await fetch(info.body.download_url, { headers: { 'x-access-token': service.adminToken } })).arrayBuffer());
    expect(downloaded.equals(box)).toBe(true);
  });
});
