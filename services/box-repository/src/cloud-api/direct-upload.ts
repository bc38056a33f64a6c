// The callback of a direct upload on the s3 driver: the bytes went to the object store by a presigned PUT, so
// nothing has checked them yet. They are read back once and verified as an upload through the service is
// (size limit, the box format, the checksum declared for the provider, the server's own sha256) before the file
// row that makes them visible commits. Bytes that fail are deleted and the upload URL is spent, saying why.
import { createHash } from 'node:crypto';
import { HttpError, unprocessable } from '@boxyard/kit';
import type { ServiceContext } from '../context.ts';
import { BoxInspector, NotABoxError } from '../files/box-inspector.ts';
import type { ClientChecksum, StoredUpload } from '../files/upload.ts';
import { spendGrant, type Grant } from './upload-grants.ts';

export const notArrived = () => new HttpError(409, 'No box file has arrived at the upload URL yet: PUT the file to upload_path first, then call the callback');

async function readBack(ctx: ServiceContext, key: string, declared: ClientChecksum | undefined): Promise<{ sha256: string; declared: string | undefined }> {
  const sha256 = createHash('sha256');
  const extra = declared && declared.type !== 'sha256' ? createHash(declared.type) : undefined;
  const inspector = new BoxInspector(ctx.config.uploads.inspection);
  try {
    for await (const chunk of await ctx.store.get(key)) {
      sha256.update(chunk as Buffer);
      extra?.update(chunk as Buffer);
      // The inspector parses only until metadata.json; after that a write costs nothing.
      await inspector.write(chunk as Buffer);
    }
    await inspector.end();
  } finally {
    inspector.destroy();
  }
  return { sha256: sha256.digest('hex'), declared: extra?.digest('hex') };
}

/** Verifies the object of a direct upload; on failure deletes it, spends the grant and throws the reason. */
export async function verifyDirectUpload(ctx: ServiceContext, grant: Grant, declared: ClientChecksum | undefined): Promise<StoredUpload> {
  const key = grant.storage_key!;
  const info = await ctx.store.stat(key);
  if (!info) throw notArrived();
  const refuse = async (error: HttpError): Promise<never> => {
    await spendGrant(ctx, grant, error.message);
    await ctx.cleanup.discardUpload(key);
    throw error;
  };
  const maxBytes = ctx.config.uploads.max_bytes;
  if (info.size > maxBytes)
    return refuse(new HttpError(413, `The upload (${info.size} bytes) is larger than the limit of ${maxBytes} bytes (uploads.max_bytes); nothing was stored`));
  let digests: Awaited<ReturnType<typeof readBack>>;
  try {
    digests = await readBack(ctx, key, declared);
  } catch (error) {
    if (error instanceof NotABoxError)
      return refuse(
        unprocessable(`${error.message}; nothing was stored`, [{ pointer: '/file', rule: error.rule, params: error.params, detail: error.message }]),
      );
    throw error;
  }
  const actual = declared?.type === 'sha256' ? digests.sha256 : digests.declared;
  if (declared && actual !== declared.value) {
    return refuse(
      unprocessable(
        `Checksum mismatch: the uploaded bytes have ${declared.type} ${actual}, not ${declared.value} as declared for the provider; nothing was stored`,
        [
          {
            pointer: '/provider/checksum',
            rule: 'checksum',
            params: { checksum_type: declared.type, expected: declared.value, actual },
            detail: `does not match the uploaded bytes (${declared.type} ${actual})`,
          },
        ],
      ),
    );
  }
  return { key, size: info.size, sha256: digests.sha256, verified: declared };
}
