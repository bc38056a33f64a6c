// Resumable (tus) uploads through a file request's link, `/-/tus/<token>`, on two replicas of one share (s3 driver,
// real PostgreSQL and MinIO): tus-js-client killed at ~40 % and resumed by a new process on the other replica,
// Debian's python3-tuspy through a password-protected link, and curl for every refusal — the link's size limit,
// use limit (a use is taken at creation, given back on termination), revocation and expiry on every PATCH (one
// streaming at that moment is cut), names outside the folder or already taken, and that nothing of the folder shows.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, adminAuth, eventually, postJson, sharedSecret, startTestShare, upload, type TestShare } from '../testing/test-share.ts';
import { b64, curlRequest, PATCH, randomFile, startTusClient, TUS, tusCreate, type CurlAnswer } from '../testing/tus-clients.ts';

const MiB = 1024 * 1024;

let a: TestShare;
let b: TestShare;
let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'fs-request-tus-'));
  const overrides = { uploads: { max_bytes: 128 * MiB } };
  const sessionSecret = sharedSecret();
  a = await startTestShare({ storage: 's3', overrides, sessionSecret });
  b = await startTestShare({ storage: 's3', overrides, sessionSecret, databaseUrl: a.databaseUrl, ...(a.bucket ? { bucket: a.bucket } : {}) });
  for (const folder of ['inbox', 'other']) expect((await postJson(a.url, '/folders', { folderName: folder }, adminAuth)).status).toBe(201);
  expect((await upload(a.url, '/inbox/taken.txt', 'already here', adminAuth)).status).toBe(201);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await rm(work, { recursive: true, force: true });
});

interface Link {
  id: string;
  token: string;
}

async function makeLink(body: Record<string, unknown>): Promise<Link> {
  const response = await postJson(a.url, '/api/shares', body, adminAuth);
  expect(response.status).toBe(201);
  const share = ((await response.json()) as { data: { share: { id: string; url: string } } }).data.share;
  return { id: share.id, token: new URL(share.url).pathname.split('/')[3]! };
}

const revoke = (link: Link) => fetch(`${a.url}/api/shares/${link.id}`, { method: 'DELETE', headers: { authorization: adminAuth } });

/** One curl request, as an outsider sends it (no account). */
const curl = curlRequest;

const createOn = (share: TestShare, link: Link, length: number, metadata: string, user?: string) =>
  tusCreate(`${share.url}/-/tus/${link.token}`, length, metadata, user ? { user } : {});

const linkUses = async (link: Link) => (await a.share.pool.oneFirst(sql.unsafe`select uses from share_links where id = ${link.id}::uuid`)) as number;
const stored = async (path: string) => (await a.share.pool.maybeOneFirst(sql.unsafe`select sha256 from entries where path = ${path}`)) as string | null;
const message = (answer: CurlAnswer) => (JSON.parse(answer.body) as { success: boolean; message: string }).message;

describe('resumable uploads through a file request', () => {
  it("tus-js-client, killed at ~40 %, resumes on the other replica; the link's one use is held meanwhile", { timeout: 120_000 }, async () => {
    const size = 64 * MiB;
    const file = join(work, 'big.bin');
    const expected = await randomFile(file, size);
    const link = await makeLink({ path: '/inbox', kind: 'request', max_uses: 1, max_file_bytes: size });
    const args = { file, authorization: '', path: 'big.bin', chunkBytes: 8 * MiB };
    const first = startTusClient('js', { ...args, endpoint: `${a.url}/-/tus/${link.token}` }, 0.4 * size);
    expect(await first.exit).toBeNull(); // killed
    const uploadPath = new URL(await first.url).pathname;
    expect(uploadPath).toMatch(new RegExp(`^/-/tus/${link.token}/[0-9a-f-]{36}$`));
    const head = await curl('HEAD', `${b.url}${uploadPath}`, TUS);
    expect(head.status).toBe(200);
    expect(Number(head.headers['upload-offset'])).toBeGreaterThan(0);
    expect(Number(head.headers['upload-offset'])).toBeLessThan(size);
    expect(await stored('/inbox/big.bin')).toBeNull();
    // The upload in progress holds the link's only use: another visitor cannot start one.
    expect(await linkUses(link)).toBe(1);
    const second = await createOn(b, link, 10, `filename ${b64('second.bin')}`);
    expect(second.status).toBe(410);
    expect(message(second)).toMatch(/used as many times/);
    // Not through the signed-in endpoint, nor another link, nor as anyone's upload but the link's.
    const id = uploadPath.split('/').pop()!;
    expect((await curl('HEAD', `${a.url}/api/uploads/${id}`, TUS)).status).toBe(401);
    expect((await curl('HEAD', `${a.url}/api/uploads/${id}`, TUS, { user: `admin:${ADMIN_PASSWORD}` })).status).toBe(404);
    const other = await makeLink({ path: '/inbox', kind: 'request' });
    expect((await curl('HEAD', `${a.url}/-/tus/${other.token}/${id}`, TUS)).status).toBe(404);

    const resumed = startTusClient('js', { ...args, endpoint: `${b.url}/-/tus/${link.token}`, uploadUrl: `${b.url}${uploadPath}` });
    expect(await resumed.exit).toBe(0);
    expect(resumed.lines).toContain('done');
    expect(await stored('/inbox/big.bin')).toBe(expected);
    expect(await linkUses(link)).toBe(1);
    // The owner sees what arrived: the link's arrivals and the request-upload event.
    const details = (await (await fetch(`${a.url}/api/shares/${link.id}`, { headers: { authorization: adminAuth } })).json()) as {
      data: { arrivals: { path: string; sha256: string }[] };
    };
    expect(details.data.arrivals).toEqual([expect.objectContaining({ path: '/inbox/big.bin', checksum: expected })]);
    const event = await a.share.pool.maybeOne(sql.unsafe`select data from events where name = 'request-upload' and paths = array['/inbox/big.bin']`);
    expect(event).toMatchObject({ data: { shareId: link.id, size, checksum: expected } });
    // Used up now: the link accepts nothing more.
    expect((await createOn(a, link, 10, `filename ${b64('third.bin')}`)).status).toBe(410);
  });

  it('python3-tuspy through a password-protected link: sha1 per chunk, `x:PASS` as Basic', { timeout: 60_000 }, async () => {
    const size = 12 * MiB;
    const file = join(work, 'py.bin');
    const expected = await randomFile(file, size);
    const link = await makeLink({ path: '/inbox', kind: 'request', password: 'request-pass-1' });
    expect((await createOn(a, link, size, `filename ${b64('py.bin')}`)).status).toBe(401);
    expect((await createOn(a, link, size, `filename ${b64('py.bin')}`, 'x:wrong-password')).status).toBe(401);
    const run = startTusClient('py', {
      endpoint: `${a.url}/-/tus/${link.token}`,
      file,
      authorization: `Basic ${b64('x:request-pass-1')}`,
      path: 'py.bin',
      chunkBytes: 4 * MiB,
    });
    expect(await run.exit).toBe(0);
    expect(await stored('/inbox/py.bin')).toBe(expected);
  });

  it("refuses names outside the folder, taken names and sizes past the link's limit, naming no path", async () => {
    const link = await makeLink({ path: '/inbox', kind: 'request', max_file_bytes: 1000 });
    const refusals: [string, number, number][] = [
      [`path ${b64('/other/x.bin')}`, 10, 403],
      [`filename ${b64('x.bin')},folder ${b64('/other')}`, 10, 403],
      [`filename ${b64('../other/x.bin')}`, 10, 400],
      [`filename ${b64('sub/x.bin')}`, 10, 400],
      [`filetype ${b64('text/plain')}`, 10, 400],
      [`filename ${b64('big.bin')}`, 1001, 413],
      [`filename ${b64('taken.txt')}`, 10, 409],
      ['filename !!!', 10, 400],
    ];
    for (const [metadata, length, status] of refusals) {
      const answer = await createOn(a, link, length, metadata);
      expect(answer.status, metadata).toBe(status);
      expect(answer.body).not.toContain('/inbox');
      expect(answer.body).not.toContain('/other');
    }
    expect(await linkUses(link)).toBe(0); // nothing was created, no use taken
    expect(
      (await curl('POST', `${a.url}/-/tus/AAAAAAAAAAAAAAAAAAAAAA`, { ...TUS, 'Upload-Length': '1', 'Upload-Metadata': `filename ${b64('x')}` })).status,
    ).toBe(404);
    const share = await makeLink({ path: '/inbox' });
    expect((await createOn(a, share, 1, `filename ${b64('x.bin')}`)).status).toBe(403);
    // The upload-only visitor cannot list or download the folder through the link.
    expect((await curl('GET', `${a.url}/-/s/${link.token}/?format=json`, {})).status).toBe(403);
    expect((await curl('GET', `${a.url}/-/s/${link.token}/taken.txt`, {})).status).toBe(403);
  });

  it('revocation and expiry end an upload in progress at the next PATCH, and cut one that is streaming', { timeout: 60_000 }, async () => {
    const data = randomBytes(2 * MiB);
    const revoked = await makeLink({ path: '/inbox', kind: 'request' });
    const created = await createOn(a, revoked, data.length, `filename ${b64('revoked.bin')}`);
    expect(created.status).toBe(201);
    const url = `${b.url}${created.headers.location}`;
    expect((await curl('PATCH', url, { ...PATCH, 'Upload-Offset': '0' }, { data: data.subarray(0, MiB) })).status).toBe(204);
    expect((await revoke(revoked)).status).toBe(200);
    const refused = await curl('PATCH', url, { ...PATCH, 'Upload-Offset': String(MiB) }, { data: data.subarray(MiB) });
    expect(refused.status).toBe(410);
    expect(message(refused)).toBe('This link has been revoked');
    expect((await curl('HEAD', url, TUS)).status).toBe(410);
    expect(await stored('/inbox/revoked.bin')).toBeNull();

    const expiring = await makeLink({ path: '/inbox', kind: 'request' });
    const second = await createOn(a, expiring, data.length, `filename ${b64('expired.bin')}`);
    await a.share.pool.query(sql.unsafe`update share_links set expires_at = now() - interval '1 second' where id = ${expiring.id}::uuid`);
    const expired = await curl('PATCH', `${a.url}${second.headers.location}`, { ...PATCH, 'Upload-Offset': '0' }, { data });
    expect(expired.status).toBe(410);
    expect(message(expired)).toBe('This link has expired');

    // A PATCH streaming slowly (2 MiB at 256 KiB/s: 8 s) is cut once the link is revoked, and counts for nothing.
    const cut = await makeLink({ path: '/inbox', kind: 'request' });
    const third = await createOn(a, cut, data.length, `filename ${b64('cut.bin')}`);
    const id = third.headers.location!.split('/').pop()!;
    const started = Date.now();
    const streaming = curl('PATCH', `${a.url}${third.headers.location}`, { ...PATCH, 'Upload-Offset': '0' }, { data, rate: '256k' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await revoke(cut)).status).toBe(200);
    const answer = await streaming;
    expect(answer.status).toBe(410);
    expect(Date.now() - started).toBeLessThan(6000);
    expect(Number(await a.share.pool.oneFirst(sql.unsafe`select received from resumable_uploads where id = ${id}::uuid`))).toBe(0);
  });

  it('a terminated upload gives its use back', async () => {
    const link = await makeLink({ path: '/inbox', kind: 'request', max_uses: 1 });
    const created = await createOn(a, link, 100, `filename ${b64('gone.bin')}`);
    expect(created.status).toBe(201);
    expect((await createOn(a, link, 100, `filename ${b64('gone2.bin')}`)).status).toBe(410);
    expect((await curl('DELETE', `${a.url}${created.headers.location}`, TUS)).status).toBe(204);
    expect(await linkUses(link)).toBe(0);
    // creation-with-upload: the whole file in the POST lands at once and keeps its use.
    const whole = await curl(
      'POST',
      `${a.url}/-/tus/${link.token}`,
      { ...PATCH, 'Upload-Length': '5', 'Upload-Metadata': `filename ${b64('whole.txt')}` },
      { data: Buffer.from('hello') },
    );
    expect(whole.status).toBe(201);
    expect(whole.headers['upload-file-sha256']).toBe(createHash('sha256').update('hello').digest('hex'));
    expect(await linkUses(link)).toBe(1);
    await eventually(async () => (await stored('/inbox/whole.txt')) !== null);
  });
});
