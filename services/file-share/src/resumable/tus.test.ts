// tus 1.0 at /api/uploads, spoken with curl (s3 driver, on each of the run's S3 servers): the protocol's answers and
// every bad input the issue lists, each with what is (not) stored afterwards.
import { request } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, incompleteUploads, s3Server, s3Servers } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, adminAuth, bucketKeys, createKey, createUser, eventually, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { b64, curlRequest, PATCH, TUS, tusCreate, type CurlOptions } from '../testing/tus-clients.ts';

const digest = (algorithm: string, data: Buffer) => createHash(algorithm).update(data).digest();
const MiB = 1024 * 1024;
const MAX = 32 * MiB;

let test: TestShare;

/** One curl request to the share (as admin unless `user` says otherwise). */
const curl = (method: string, path: string, headers: Record<string, string>, options: CurlOptions = {}) =>
  curlRequest(method, `${test.url}${path}`, headers, { user: `admin:${ADMIN_PASSWORD}`, ...options });

/** A tus creation at /api/uploads (as admin unless `options` say otherwise). */
const creation = (length: number, metadata: string, options: CurlOptions = {}) =>
  tusCreate(`${test.url}/api/uploads`, length, metadata, { user: `admin:${ADMIN_PASSWORD}`, ...options });

async function create(path: string, length: number, user?: string): Promise<string> {
  const answer = await creation(length, `path ${b64(path)}`, user ? { user } : {});
  expect(answer.status, answer.body).toBe(201);
  return answer.headers.location!;
}

const entry = async (path: string) =>
  (await test.share.pool.maybeOne(sql.unsafe`select size, sha256 from entries where path = ${path}`)) as { size: string; sha256: string } | null;

/** How many parts S3 holds for the upload's multipart upload (recorded or not). */
async function incompleteParts(id: string): Promise<number> {
  const row = (await test.share.pool.one(sql.unsafe`select storage_key, multipart_id from resumable_uploads where id = ${id}`)) as {
    storage_key: string;
    multipart_id: string;
  };
  // listParts is protected in minio's typings; S3 answers it like any request.
  const client = test.bucket!.client as unknown as { listParts(bucket: string, name: string, uploadId: string): Promise<unknown[]> };
  return (await client.listParts(test.bucket!.bucket, `${test.prefix}/${row.storage_key}`, row.multipart_id)).length;
}

describe.each(s3Servers)('tus 1.0 with curl ($server)', ({ server }) => {
  beforeAll(async () => {
    test = await startTestShare({ storage: 's3', bucket: await createTestBucket('fs', s3Server(server)), overrides: { uploads: { max_bytes: MAX } } });
  });
  afterAll(() => test?.close());

  it('OPTIONS tells the version, extensions, maximum and checksum algorithms', async () => {
    const answer = await curl('OPTIONS', '/api/uploads', {});
    expect(answer.status).toBe(204);
    expect(answer.headers).toMatchObject({
      'tus-version': '1.0.0',
      'tus-extension': 'creation,creation-with-upload,expiration,termination,checksum',
      'tus-max-size': String(MAX),
      'tus-checksum-algorithm': 'sha1,sha256',
    });
  });

  it('uploads in chunks with checksums; 415, 409 and 460 change nothing; the file appears only at the end with its sha256', async () => {
    const data = randomBytes(300_000);
    const url = await create('/tus/one.bin', data.length);
    expect(url).toMatch(/^\/api\/uploads\/[0-9a-f-]{36}$/);
    const first = data.subarray(0, 100_000);

    expect((await curl('PATCH', url, { ...TUS, 'Content-Type': 'application/octet-stream', 'Upload-Offset': '0' }, { data: first })).status).toBe(415);
    expect((await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '5' }, { data: first })).status).toBe(409);
    const wrongSha1 = await curl(
      'PATCH',
      url,
      { ...PATCH, 'Upload-Offset': '0', 'Upload-Checksum': `sha1 ${digest('sha1', Buffer.from('x')).toString('base64')}` },
      { data: first },
    );
    expect(wrongSha1.status).toBe(460);
    expect(JSON.parse(wrongSha1.body)).toMatchObject({ success: false });
    const wrongSha256 = await curl(
      'PATCH',
      url,
      { ...PATCH, 'Upload-Offset': '0', 'Upload-Checksum': `sha256 ${digest('sha256', Buffer.from('x')).toString('base64')}` },
      { data: first },
    );
    expect(wrongSha256.status).toBe(460);
    expect((await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '0', 'Upload-Checksum': 'md5 AAAA' }, { data: first })).status).toBe(400);
    let head = await curl('HEAD', url, TUS);
    expect(head.status).toBe(200);
    expect(head.headers).toMatchObject({ 'upload-offset': '0', 'upload-length': '300000', 'cache-control': 'no-store', 'tus-resumable': '1.0.0' });

    const ok = await curl(
      'PATCH',
      url,
      { ...PATCH, 'Upload-Offset': '0', 'Upload-Checksum': `sha1 ${digest('sha1', first).toString('base64')}` },
      { data: first },
    );
    expect(ok.status).toBe(204);
    expect(ok.headers['upload-offset']).toBe('100000');
    expect(new Date(ok.headers['upload-expires']!).getTime()).toBeGreaterThan(Date.now());
    expect(await entry('/tus/one.bin')).toBeNull(); // unfinished: invisible
    expect((await fetch(`${test.url}/tus/one.bin`, { headers: { authorization: adminAuth } })).status).toBe(404);

    const rest = data.subarray(100_000);
    const last = await curl(
      'PATCH',
      url,
      { ...PATCH, 'Upload-Offset': '100000', 'Upload-Checksum': `sha256 ${digest('sha256', rest).toString('base64')}` },
      { data: rest },
    );
    expect(last.status).toBe(204);
    expect(last.headers['upload-offset']).toBe('300000');
    expect(last.headers['upload-file-sha256']).toBe(digest('sha256', data).toString('hex'));
    expect(await entry('/tus/one.bin')).toMatchObject({ sha256: digest('sha256', data).toString('hex') });
    const event = await test.share.pool.maybeOne(
      sql.unsafe`select data from events where name = 'checksum-update' and paths = array['/tus/one.bin'] order by id desc limit 1`,
    );
    expect(event).toMatchObject({ data: { filePath: '/tus/one.bin', checksum: digest('sha256', data).toString('hex'), size: 300_000 } });
    const got = Buffer.from(await (await fetch(`${test.url}/tus/one.bin`, { headers: { authorization: adminAuth } })).arrayBuffer());
    expect(got.equals(data)).toBe(true);
    head = await curl('HEAD', url, TUS);
    expect(head.headers['upload-offset']).toBe('300000');
    // The chunks go once the file is committed.
    await eventually(async () => (await bucketKeys(test)).every((key) => !key.includes('/uploads/')));
  });

  it('s3: chunks of 5 MiB and more become parts as they arrive, smaller ones are staged and folded; a bad part is replaced', async () => {
    const data = randomBytes(14 * MiB);
    const url = await create('/tus/parts.bin', data.length);
    const send = (from: number, to: number, checksum?: Buffer) =>
      curl(
        'PATCH',
        url,
        { ...PATCH, 'Upload-Offset': String(from), ...(checksum ? { 'Upload-Checksum': `sha256 ${checksum.toString('base64')}` } : {}) },
        { data: data.subarray(from, to) },
      );
    // A 6 MiB part whose checksum is wrong is dropped; sent again, it takes the same part number.
    expect((await send(0, 6 * MiB, digest('sha256', Buffer.from('wrong')))).status).toBe(460);
    expect((await send(0, 6 * MiB, digest('sha256', data.subarray(0, 6 * MiB)))).status).toBe(204);
    expect((await send(6 * MiB, 7 * MiB)).status).toBe(204); // 1 MiB: staged
    expect((await send(7 * MiB, 13 * MiB)).status).toBe(204); // staged behind it, then both fold into one part
    const id = url.split('/').pop()!;
    const segments = await test.share.pool.any(
      sql.unsafe`select "offset"::int as offset, length::int as length, part, storage_key from resumable_segments where upload_id = ${id} order by "offset"`,
    );
    expect(segments).toEqual([
      { offset: 0, length: 6 * MiB, part: 1, storage_key: null },
      { offset: 6 * MiB, length: 7 * MiB, part: 2, storage_key: null },
    ]);
    const last = await send(13 * MiB, 14 * MiB); // the last MiB: staged, folded as the last part
    expect(last.status).toBe(204);
    expect(last.headers['upload-file-sha256']).toBe(digest('sha256', data).toString('hex'));
    const got = Buffer.from(await (await fetch(`${test.url}/tus/parts.bin`, { headers: { authorization: adminAuth } })).arrayBuffer());
    expect(got.equals(data)).toBe(true);
    await eventually(async () => (await bucketKeys(test)).every((key) => !key.includes('/uploads/')));
    const key = await test.share.pool.oneFirst(sql.unsafe`select storage_key from entries where path = '/tus/parts.bin'`);
    expect(await incompleteUploads(test.bucket!)).not.toContain(`${test.prefix}/${String(key)}`);
  });

  it('s3: a 32 MiB chunk streams as two 16 MiB parts; one cut after its first part records nothing, sent again it completes', async () => {
    const data = randomBytes(32 * MiB);
    const url = await create('/tus/two-parts.bin', data.length);
    const id = url.split('/').pop()!;
    // 24 MiB of the 32 announced, then the connection is cut: the first 16 MiB part was sent to S3 by then.
    const cut = request(`${test.url}${url}`, {
      method: 'PATCH',
      headers: { authorization: adminAuth, ...PATCH, 'upload-offset': '0', 'content-length': String(data.length) },
    });
    cut.on('error', () => {}); // the cut below is the point
    cut.write(data.subarray(0, 24 * MiB));
    await eventually(async () => (await incompleteParts(id)) >= 1);
    cut.destroy();
    await eventually(async () => (await test.share.pool.oneFirst(sql.unsafe`select lease_token is null from resumable_uploads where id = ${id}`)) === true);
    const head = await curl('HEAD', url, TUS);
    expect(head.headers['upload-offset']).toBe('0');
    expect(await test.share.pool.oneFirst(sql.unsafe`select count(*)::int from resumable_segments where upload_id = ${id}`)).toBe(0);
    const sent = await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '0', 'Upload-Checksum': `sha1 ${digest('sha1', data).toString('base64')}` }, { data });
    expect(sent.status).toBe(204);
    expect(sent.headers['upload-file-sha256']).toBe(digest('sha256', data).toString('hex'));
    const got = Buffer.from(await (await fetch(`${test.url}/tus/two-parts.bin`, { headers: { authorization: adminAuth } })).arrayBuffer());
    expect(got.equals(data)).toBe(true);
  });

  it('s3: a PATCH is answered before its part is stored; the next one, sent at once, goes on after it', async () => {
    const data = randomBytes(15 * MiB);
    const url = `${test.url}${await create('/tus/pipelined.bin', data.length)}`;
    const patch = (from: number, to: number) =>
      fetch(url, { method: 'PATCH', headers: { authorization: adminAuth, ...PATCH, 'upload-offset': String(from) }, body: data.subarray(from, to) });
    const first = await patch(0, 5 * MiB);
    expect(first.status).toBe(204);
    expect(first.headers.get('upload-offset')).toBe(String(5 * MiB));
    // HEAD names only stored bytes: the previous offset while the commit is on its way, never more.
    const head = await fetch(url, { method: 'HEAD', headers: { authorization: adminAuth, ...TUS } });
    expect([0, 5 * MiB]).toContain(Number(head.headers.get('upload-offset')));
    const second = await patch(5 * MiB, 10 * MiB); // not 409: it takes the lease over from the first chunk (or waits for its commit)
    expect(second.status).toBe(204);
    const last = await patch(10 * MiB, 15 * MiB);
    expect(last.status).toBe(204);
    expect(last.headers.get('upload-file-sha256')).toBe(digest('sha256', data).toString('hex'));
    const id = url.split('/').pop()!;
    expect(
      await test.share.pool.any(sql.unsafe`select "offset"::int as offset, part from resumable_segments where upload_id = ${id} order by "offset"`),
    ).toEqual([]); // ended: segments gone
    expect(await entry('/tus/pipelined.bin')).toMatchObject({ sha256: digest('sha256', data).toString('hex') });
  });

  it('creation-with-upload, and X-HTTP-Method-Override', async () => {
    const data = randomBytes(50_000);
    const created = await curl(
      'POST',
      '/api/uploads',
      { ...PATCH, 'Upload-Length': String(data.length), 'Upload-Metadata': `filename ${b64('two.bin')},folder ${b64('/tus')}` },
      { data: data.subarray(0, 20_000) },
    );
    expect(created.status).toBe(201);
    expect(created.headers['upload-offset']).toBe('20000');
    const rest = await curl(
      'POST',
      created.headers.location!,
      { ...PATCH, 'X-HTTP-Method-Override': 'PATCH', 'Upload-Offset': '20000' },
      { data: data.subarray(20_000) },
    );
    expect(rest.status).toBe(204);
    expect(await entry('/tus/two.bin')).toMatchObject({ sha256: digest('sha256', data).toString('hex') });
  });

  it('412 without Tus-Resumable or with another version, 413 over the maximum, 400 for malformed Upload-Metadata', async () => {
    const missing = await curl('POST', '/api/uploads', { 'Upload-Length': '10', 'Upload-Metadata': `path ${b64('/a.bin')}` });
    expect(missing.status).toBe(412);
    expect(missing.headers['tus-version']).toBe('1.0.0');
    expect((await curl('POST', '/api/uploads', { 'Tus-Resumable': '0.2.2', 'Upload-Length': '10' })).status).toBe(412);
    expect((await creation(MAX + 1, `path ${b64('/big.bin')}`)).status).toBe(413);
    for (const metadata of [
      'path !!!',
      `path ${b64('/a')},path ${b64('/b')}`,
      'path a b c',
      `p=th ${b64('/a')}`,
      'path',
      `path ${Buffer.from([0xff, 0xfe]).toString('base64')}`,
      `path ${b64('/../etc')}`,
      `filename ${b64('a/b')}`,
    ]) {
      const answer = await creation(10, metadata);
      expect(answer.status, metadata).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ success: false });
    }
    expect((await curl('POST', '/api/uploads', { ...TUS, 'Upload-Length': '10' })).status).toBe(400); // no destination
    expect((await curl('POST', '/api/uploads', { ...TUS, 'Upload-Metadata': `path ${b64('/a.bin')}` })).status).toBe(400); // no length
    // A PATCH past the length is refused before anything is stored.
    const url = await create('/tus/short.bin', 10);
    expect((await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '0' }, { data: Buffer.alloc(11) })).status).toBe(413);
    expect((await curl('HEAD', url, TUS)).headers['upload-offset']).toBe('0');
    const rows = await test.share.pool.oneFirst(sql.unsafe`select count(*)::int from resumable_uploads where path in ('/a.bin', '/big.bin', '/a', '/b')`);
    expect(rows).toBe(0);
  });

  it("terminated: 204, then 410; expired: 410 and its bytes are swept; unknown or someone else's: 404", async () => {
    const url = await create('/tus/gone.bin', 1000);
    expect((await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '0' }, { data: Buffer.alloc(400, 1) })).status).toBe(204);
    const key = await test.share.pool.oneFirst(sql.unsafe`select storage_key from resumable_uploads where id = ${url.split('/').pop()!}`);
    expect(await incompleteUploads(test.bucket!)).toContain(`${test.prefix}/${String(key)}`);
    expect((await curl('DELETE', url, TUS)).status).toBe(204);
    expect((await curl('HEAD', url, TUS)).status).toBe(410);
    expect((await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '400' }, { data: Buffer.alloc(10) })).status).toBe(410);
    // Its multipart upload (s3) is aborted with its parts.
    await eventually(async () => !(await incompleteUploads(test.bucket!)).includes(`${test.prefix}/${String(key)}`));

    const expiring = await create('/tus/late.bin', 1000);
    expect((await curl('PATCH', expiring, { ...PATCH, 'Upload-Offset': '0' }, { data: Buffer.alloc(400, 2) })).status).toBe(204);
    const id = expiring.split('/').pop()!;
    await test.share.pool.query(sql.unsafe`update resumable_uploads set expires_at = now() - interval '1 second' where id = ${id}`);
    expect((await curl('HEAD', expiring, TUS)).status).toBe(410);
    expect((await curl('PATCH', expiring, { ...PATCH, 'Upload-Offset': '400' }, { data: Buffer.alloc(10) })).status).toBe(410);
    await eventually(async () => (await bucketKeys(test)).every((key) => !key.includes(`/uploads/${id}/`)));
    expect(await entry('/tus/late.bin')).toBeNull();

    expect((await curl('HEAD', '/api/uploads/00000000-0000-4000-8000-000000000000', TUS)).status).toBe(404);
    expect((await curl('HEAD', '/api/uploads/not-an-id', TUS)).status).toBe(404);
    const other = await createUser(test.url, 'tus-other', 'user');
    const mine = await create('/tus/mine.bin', 10);
    const password = Buffer.from(other.authorization.slice(6), 'base64').toString().split(':')[1]!;
    expect((await curl('HEAD', mine, TUS, { user: `tus-other:${password}` })).status).toBe(404);
    expect((await curl('PATCH', mine, { ...PATCH, 'Upload-Offset': '0' }, { data: Buffer.alloc(10), user: `tus-other:${password}` })).status).toBe(404);
  });

  it("the plain upload rules: uploads permission, an API key's folder, replacing needs delete — at creation and at completion", async () => {
    const { token } = await createKey(test.url, adminAuth, { name: 'tus-scoped', permissions: ['uploads'], scope: '/inbox' });
    const keyed = async (path: string, bearer?: string) =>
      (await tusCreate(`${test.url}/api/uploads`, 5, `path ${b64(path)}`, bearer ? { headers: { authorization: `Bearer ${bearer}` } } : {})).status;
    expect(await keyed('/elsewhere/a.bin', token)).toBe(403);
    expect(await keyed('/inbox/a.bin', token)).toBe(201);
    const reader = await createKey(test.url, adminAuth, { name: 'tus-reader', permissions: ['downloads'] });
    expect(await keyed('/r.bin', reader.token)).toBe(403);
    expect(await keyed('/r.bin')).toBe(401); // anonymous

    // A user (no delete) cannot create over an existing file, nor complete onto one that appeared meanwhile.
    const user = await createUser(test.url, 'tus-user', 'user');
    const password = Buffer.from(user.authorization.slice(6), 'base64').toString().split(':')[1]!;
    expect((await upload(test.url, '/tus/taken.bin', 'old', adminAuth)).status).toBe(201);
    const refused = await creation(3, `path ${b64('/tus/taken.bin')}`, { user: `tus-user:${password}` });
    expect(refused.status).toBe(403);
    const late = await create('/tus/raced.bin', 3, `tus-user:${password}`);
    expect((await upload(test.url, '/tus/raced.bin', 'first', adminAuth)).status).toBe(201);
    expect((await curl('PATCH', late, { ...PATCH, 'Upload-Offset': '0' }, { data: Buffer.from('new'), user: `tus-user:${password}` })).status).toBe(403);
    const kept = await fetch(`${test.url}/tus/raced.bin`, { headers: { authorization: adminAuth } });
    expect(await kept.text()).toBe('first');
    // Every byte arrived: HEAD tries the completion again (a client seeing the full offset sends nothing more).
    expect((await curl('HEAD', late, TUS, { user: `tus-user:${password}` })).status).toBe(403);
    expect((await fetch(`${test.url}/tus/raced.bin`, { method: 'DELETE', headers: { authorization: adminAuth } })).status).toBe(200);
    const head = await curl('HEAD', late, TUS, { user: `tus-user:${password}` });
    expect(head.status).toBe(200);
    expect(head.headers['upload-offset']).toBe('3');
    expect(await (await fetch(`${test.url}/tus/raced.bin`, { headers: { authorization: adminAuth } })).text()).toBe('new');
    // The admin (delete) replaces.
    const replace = await create('/tus/taken.bin', 3);
    expect((await curl('PATCH', replace, { ...PATCH, 'Upload-Offset': '0' }, { data: Buffer.from('new') })).status).toBe(204);
    expect(await (await fetch(`${test.url}/tus/taken.bin`, { headers: { authorization: adminAuth } })).text()).toBe('new');
  });

  it('the rate limit counts the creation, not the chunks of an upload it admitted', async () => {
    const limited = await startTestShare({ storage: 'local', overrides: { rate_limiting: { enabled: true, max_requests: 3 } } });
    try {
      const created = await fetch(`${limited.url}/api/uploads`, {
        method: 'POST',
        headers: { authorization: adminAuth, ...TUS, 'upload-length': '8', 'upload-metadata': `path ${b64('/limited.bin')}` },
      });
      expect(created.status).toBe(201);
      const url = `${limited.url}${created.headers.get('location')}`;
      for (let offset = 0; offset < 8; offset++) {
        const patched = await fetch(url, {
          method: 'PATCH',
          headers: { authorization: adminAuth, ...PATCH, 'upload-offset': String(offset) },
          body: Buffer.from([offset]),
        });
        expect(patched.status).toBe(204);
      }
      const again = async () =>
        (
          await fetch(`${limited.url}/api/uploads`, {
            method: 'POST',
            headers: { authorization: adminAuth, ...TUS, 'upload-length': '1', 'upload-metadata': `path ${b64('/x.bin')}` },
          })
        ).status;
      expect([await again(), await again(), await again()]).toContain(429);
    } finally {
      await limited.close();
    }
  });
});
