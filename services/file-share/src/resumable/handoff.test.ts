// A PATCH answered before S3 has stored its parts hands its lease to the client's next PATCH on the same replica
// (handoff.ts): the next one streams at once instead of waiting for that commit, and if the commit then fails,
// both chunks are dropped and the upload stays at the last stored byte. S3 storing a part but its answer coming
// late or failing cannot be produced on cue by a real MinIO, so these tests hold or fail the answer of one part PUT
// in the share's store client (the bytes still go to the real MinIO): "injected" in the names says so.
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { MultipartUploads } from '@boxyard/kit';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestBucket, s3Server } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, startTestShare, type TestShare } from '../testing/test-share.ts';
import { b64, curlRequest, PATCH, TUS, tusCreate } from '../testing/tus-clients.ts';

const MiB = 1024 * 1024;
const CHUNK = 16 * MiB;

let test: TestShare;
let multipart: MultipartUploads;
const realPutPart = () => multipart.putPart.bind(multipart);
let putPart: ReturnType<typeof realPutPart>;

beforeAll(async () => {
  test = await startTestShare({ storage: 's3', bucket: await createTestBucket('fs', s3Server('minio')), overrides: { uploads: { max_bytes: 64 * MiB } } });
  multipart = test.share.store.multipart!;
  putPart = realPutPart();
});
afterAll(() => test?.close());

const user = `admin:${ADMIN_PASSWORD}`;
const patch = (url: string, offset: number, data: Buffer) =>
  curlRequest('PATCH', `${test.url}${url}`, { ...PATCH, 'Upload-Offset': String(offset) }, { user, data });
const head = async (url: string) => Number((await curlRequest('HEAD', `${test.url}${url}`, TUS, { user })).headers['upload-offset']);
const stored = async (path: string) => (await test.share.pool.maybeOneFirst(sql.unsafe`select sha256 from entries where path = ${path}`)) as string | null;

async function create(path: string, length: number): Promise<string> {
  const answer = await tusCreate(`${test.url}/api/uploads`, length, `path ${b64(path)}`, { user });
  expect(answer.status, answer.body).toBe(201);
  return answer.headers.location!;
}

/** Part PUTs go to MinIO as always, but the answer of the `nth` one waits for `gate` (and fails if it rejects). */
function holdAnswerOfPart(nth: number, gate: Promise<void>): void {
  let seen = 0;
  multipart.putPart = async (key: string, uploadId: string, part: number, body: Readable, length: number) => {
    const etag = await putPart(key, uploadId, part, body, length);
    if (++seen === nth) await gate;
    return etag;
  };
}

function gate() {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

describe('a PATCH takes over the lease of the chunk answered before it (s3 driver, MinIO)', () => {
  it('streams while the previous chunk is still being stored (its part answer injected late); the file is whole', { timeout: 60_000 }, async () => {
    const data = randomBytes(2 * CHUNK + MiB);
    const url = await create('/handoff/whole.bin', data.length);
    const held = gate();
    holdAnswerOfPart(1, held.promise); // the first chunk's part (a 16 MiB chunk is one part)
    try {
      expect((await patch(url, 0, data.subarray(0, CHUNK))).status).toBe(204);
      // Answered while the first chunk's commit still waits for S3: without the handoff it would wait too.
      const second = await patch(url, CHUNK, data.subarray(CHUNK, 2 * CHUNK));
      expect(second.status, second.body).toBe(204);
      expect(second.headers['upload-offset']).toBe(String(2 * CHUNK));
      expect(await head(url)).toBe(0); // HEAD names only stored bytes
      held.open();
      await expect.poll(() => head(url), { timeout: 10_000 }).toBe(2 * CHUNK);
      const last = await patch(url, 2 * CHUNK, data.subarray(2 * CHUNK));
      expect(last.status, last.body).toBe(204);
      expect(last.headers['upload-file-sha256']).toBe(createHash('sha256').update(data).digest('hex'));
      expect(await stored('/handoff/whole.bin')).toBe(createHash('sha256').update(data).digest('hex'));
    } finally {
      multipart.putPart = putPart;
    }
  });

  it('drops both chunks when the first one then fails to store (injected part failure): 409 at the old offset, resent, whole', {
    timeout: 60_000,
  }, async () => {
    const data = randomBytes(2 * CHUNK + MiB);
    const url = await create('/handoff/failed.bin', data.length);
    const held = gate();
    holdAnswerOfPart(1, held.promise);
    try {
      expect((await patch(url, 0, data.subarray(0, CHUNK))).status).toBe(204);
      expect((await patch(url, CHUNK, data.subarray(CHUNK, 2 * CHUNK))).status).toBe(204);
      held.fail(new Error('injected: S3 did not store the part'));
      expect(await head(url)).toBe(0);
      const late = await patch(url, 2 * CHUNK, data.subarray(2 * CHUNK));
      expect(late.status).toBe(409);
      expect(late.headers['upload-offset']).toBe('0');
      expect(await stored('/handoff/failed.bin')).toBeNull();
    } finally {
      multipart.putPart = putPart;
    }
    // The client resends from HEAD's offset: the same part numbers replace what S3 kept.
    for (let offset = 0; offset < data.length; offset += CHUNK) {
      const answer = await patch(url, offset, data.subarray(offset, offset + CHUNK));
      expect(answer.status, answer.body).toBe(204);
    }
    expect(await stored('/handoff/failed.bin')).toBe(createHash('sha256').update(data).digest('hex'));
  });
});
