// S3 answers that mean "try again" are the storage being unavailable (503 with Retry-After to the caller), not the
// service's own failure (500). Found on SeaweedFS (the fault test, test/faults/upload-faults.test.ts): started again
// after a crash, it answers HeadBucket at once, but a write hangs ~30 s and may fail with 500 InternalError until its
// volume server has registered with the master (~18 s). Whether that write fails or, late, succeeds depends on
// timing, so the answers are checked here as SeaweedFS sends them, without a server.
import { describe, expect, it } from 'vitest';
import { StorageUnavailableError } from './errors.ts';
import { toStorageError } from './s3-bucket.ts';
import { S3ResponseError } from './s3-upload.ts';

describe('S3 answers that ask for a retry', () => {
  it('maps InternalError and bare 500/502/503/504 answers to StorageUnavailableError, other answers not', () => {
    for (const error of [
      new S3ResponseError(500, '<Error><Code>InternalError</Code><Message>We encountered an internal error, please try again.</Message></Error>'),
      Object.assign(new Error('We encountered an internal error, please try again.'), { code: 'InternalError' }), // as minio-js reports it
      new S3ResponseError(502, ''),
      new S3ResponseError(504, '<html>gateway timeout</html>'),
    ]) {
      const mapped = toStorageError(error, 'k');
      expect(mapped, String(error)).toBeInstanceOf(StorageUnavailableError);
      expect(mapped).toMatchObject({ statusCode: 503, code: 'STORAGE_UNAVAILABLE' });
    }
    const refused = new S3ResponseError(400, '<Error><Code>InvalidArgument</Code></Error>');
    expect(toStorageError(refused, 'k')).toBe(refused);
    const notImplemented = new S3ResponseError(501, '<Error><Code>NotImplemented</Code></Error>');
    expect(toStorageError(notImplemented, 'k')).toBe(notImplemented);
  });
});
