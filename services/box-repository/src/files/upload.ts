// Receives one box file: streamed into object storage under a fresh opaque key while its size is limited, its
// sha256 (and the client's checksum type, when another) computed and its format checked; then, in one
// transaction, the file row is created or swapped to the new object and `box.uploaded` recorded. A failed,
// refused or cut-off upload leaves no row and no object; a replaced object is deleted after the commit.
import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ChecksumMismatchError, conflict, HttpError, notFound, ObjectTooLargeError, unprocessable } from '@boxyard/kit';
import type { FastifyBaseLogger } from 'fastify';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Found } from '../access/hierarchy.ts';
import type { ServiceContext } from '../context.ts';
import { recordEvent } from '../events/outbox.ts';
import { fileRow, int8, type BoxFile } from '../records.ts';
import { BoxInspector, NotABoxError } from './box-inspector.ts';
import { readWithStallTimeout } from './read-with-stall-timeout.ts';

export const CHECKSUM_TYPES = ['md5', 'sha1', 'sha256', 'sha384', 'sha512'] as const;
export type ChecksumType = (typeof CHECKSUM_TYPES)[number];
const hexLength: Record<ChecksumType, number> = { md5: 32, sha1: 40, sha256: 64, sha384: 96, sha512: 128 };

export interface ClientChecksum {
  type: ChecksumType;
  value: string;
}

export interface UploadInput {
  source: Readable;
  fileName: string;
  checksum: ClientChecksum | undefined;
  replace: boolean;
  /** The body's length, when the request announced it (Content-Length). */
  size?: number;
}

/** Names stored and served as the last URL segment: plain characters only, so no header or path can be forged with them. */
export const FILE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._+-]{0,254}$';
const fileNamePattern = new RegExp(FILE_NAME_PATTERN);

export function checkFileName(name: string, pointer: string): string {
  if (!fileNamePattern.test(name)) {
    throw unprocessable('Invalid file name', [
      {
        pointer,
        rule: 'pattern',
        params: { pattern: FILE_NAME_PATTERN },
        detail: 'must be 1 to 255 letters, digits, ".", "_", "+" or "-", starting with a letter or digit',
      },
    ]);
  }
  return name;
}

/** Validates the client's checksum and type (either may come alone: type defaults to sha256). */
export function parseClientChecksum(checksum: string | undefined, type: string | undefined): ClientChecksum | undefined {
  if (!checksum) {
    if (type && !(CHECKSUM_TYPES as readonly string[]).includes(type.toLowerCase())) throw unsupportedType(type);
    return undefined;
  }
  const checksumType = (type ?? 'sha256').toLowerCase();
  if (!(CHECKSUM_TYPES as readonly string[]).includes(checksumType)) throw unsupportedType(checksumType);
  const value = checksum.toLowerCase();
  const length = hexLength[checksumType as ChecksumType];
  if (!new RegExp(`^[0-9a-f]{${length}}$`).test(value)) {
    throw unprocessable('Invalid checksum', [
      {
        pointer: '/checksum',
        rule: 'pattern',
        params: { checksum_type: checksumType, length },
        detail: `must be ${length} hexadecimal digits for ${checksumType}`,
      },
    ]);
  }
  return { type: checksumType as ChecksumType, value };
}

const unsupportedType = (type: string) =>
  unprocessable('Unsupported checksum type', [
    {
      pointer: '/checksum_type',
      rule: 'enum',
      params: { allowedValues: CHECKSUM_TYPES },
      detail: `must be one of ${CHECKSUM_TYPES.join(', ')} (got '${type}')`,
    },
  ]);

const checksumMismatch = (type: string, expected: string, actual: string) =>
  unprocessable(`Checksum mismatch: the uploaded bytes have ${type} ${actual}, not ${expected}; nothing was stored`, [
    {
      pointer: '/checksum',
      rule: 'checksum',
      params: { checksum_type: type, expected, actual },
      detail: `does not match the uploaded bytes (${type} ${actual})`,
    },
  ]);

/** Files of released (active or revoked) versions are only replaced on explicit request. */
export function assertReplaceAllowed(status: string, existing: boolean, replace: boolean, architecture: string): void {
  if (existing && status !== 'unreleased' && !replace) {
    throw conflict(`Architecture '${architecture}' already has a file and its version is ${status}: pass replace=true to replace it, or delete it first`);
  }
}

function mapUploadError(error: unknown, maxBytes: number): unknown {
  if (error instanceof NotABoxError) {
    return unprocessable(error.message, [{ pointer: '/file', rule: error.rule, params: error.params, detail: error.message }]);
  }
  if (error instanceof ChecksumMismatchError) return checksumMismatch('sha256', error.expected, error.actual);
  if (error instanceof ObjectTooLargeError)
    return new HttpError(413, `The upload is larger than the limit of ${maxBytes} bytes (uploads.max_bytes); nothing was stored`);
  return error;
}

/** Bytes that are in storage under `key` but not yet referenced by a row (registered for the sweep). */
export interface StoredUpload {
  key: string;
  size: number;
  sha256: string;
  /** The client's checksum the bytes were verified against while streaming, if one was given in time. */
  verified: ClientChecksum | undefined;
}

/** Streams the body into storage under a fresh key; a refused or cut-off body leaves nothing behind. */
export async function storeUpload(ctx: ServiceContext, input: Pick<UploadInput, 'source' | 'checksum' | 'size'>): Promise<StoredUpload> {
  const { max_bytes: maxBytes, stall_timeout_seconds: stallSeconds } = ctx.config.uploads;
  const key = `boxes/${randomUUID()}`;
  await ctx.cleanup.registerUpload(key);

  const inspector = new BoxInspector(ctx.config.uploads.inspection);
  const extraHash = input.checksum && input.checksum.type !== 'sha256' ? createHash(input.checksum.type) : undefined;
  async function* inspected(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of readWithStallTimeout(input.source, stallSeconds)) {
        extraHash?.update(chunk);
        await inspector.write(chunk);
        yield chunk;
      }
      await inspector.end();
      if (extraHash && input.checksum) {
        const actual = extraHash.digest('hex');
        if (actual !== input.checksum.value) throw checksumMismatch(input.checksum.type, input.checksum.value, actual);
      }
    } finally {
      inspector.destroy();
    }
  }

  try {
    const stored = await ctx.store.put(key, inspected(), {
      maxBytes,
      contentType: 'application/octet-stream',
      ...(input.size !== undefined ? { size: input.size } : {}),
      ...(input.checksum?.type === 'sha256' ? { expectedSha256: input.checksum.value } : {}),
    });
    return { key, size: stored.size, sha256: stored.sha256, verified: input.checksum };
  } catch (error) {
    await ctx.cleanup.discardUpload(key); // nothing is stored; this drops the registration
    throw mapUploadError(error, maxBytes);
  }
}

/** Drops stored bytes no row will refer to (an upload refused after its body was stored). */
export const discardStoredUpload = (ctx: ServiceContext, stored: StoredUpload) => ctx.cleanup.discardUpload(stored.key);

/**
 * The client's checksum as known once the whole request was read (multipart fields may follow the file part).
 * One verified while streaming, or a sha256 (known for every upload), is checked; another type that arrived too
 * late to be computed is refused rather than accepted unverified.
 */
export function verifyFinalChecksum(stored: StoredUpload, final: ClientChecksum | undefined): ClientChecksum {
  if (!final) return stored.verified ?? { type: 'sha256', value: stored.sha256 };
  if (stored.verified && stored.verified.type === final.type && stored.verified.value === final.value) return final;
  if (final.type === 'sha256') {
    if (final.value !== stored.sha256) throw checksumMismatch('sha256', final.value, stored.sha256);
    return final;
  }
  throw unprocessable(
    `A ${final.type} checksum can only be verified when it comes before the file: send the fields checksum and checksum_type before the part \`file\`, or in the query; nothing was stored`,
    [
      {
        pointer: '/checksum_type',
        rule: 'field_order',
        params: { checksum_type: final.type },
        detail: 'must come before the part `file` (or in the query) for types other than sha256',
      },
    ],
  );
}

/** In one transaction: the file row created or swapped to the stored bytes, and `box.uploaded` recorded. */
export async function commitUpload(
  ctx: ServiceContext,
  found: Found,
  stored: StoredUpload,
  input: { fileName: string; checksum: ClientChecksum; replace: boolean; within?: (tx: DatabaseTransactionConnection) => Promise<void> },
  log: FastifyBaseLogger,
): Promise<{ file: BoxFile; replaced: boolean }> {
  const architecture = found.architecture!;
  const { key } = stored;
  const { checksum } = input;
  try {
    const result = await ctx.pool.transaction(async (tx) => {
      // Serialises uploads to one architecture; also proves it still exists.
      const status = await tx.maybeOneFirst(sql.type(z.object({ status: z.string() }))`
        select v.status from architectures a join providers p on p.id = a.provider_id join versions v on v.id = p.version_id
        where a.id = ${architecture.id} for update of a`);
      if (status === null) throw notFound(`Architecture '${architecture.name}' was deleted during the upload`);
      const previous = await tx.maybeOne(sql.type(z.object({ id: int8, storage_key: z.string() }))`
        select id, storage_key from files where architecture_id = ${architecture.id}`);
      assertReplaceAllowed(status, previous !== null, input.replace, architecture.name);
      const file = previous
        ? await tx.one(sql.type(z.object({ f: fileRow }))`
            update files f set file_name = ${input.fileName}, storage_key = ${key}, size = ${stored.size}, sha256 = ${stored.sha256},
                   checksum_type = ${checksum.type}, checksum = ${checksum.value}, updated_at = now()
            where id = ${previous.id} returning to_jsonb(f) as f`)
        : await tx.one(sql.type(z.object({ f: fileRow }))`
            insert into files as f (architecture_id, file_name, storage_key, size, sha256, checksum_type, checksum)
            values (${architecture.id}, ${input.fileName}, ${key}, ${stored.size}, ${stored.sha256}, ${checksum.type}, ${checksum.value})
            returning to_jsonb(f) as f`);
      await input.within?.(tx); // e.g. using up the upload URL that brought the bytes (cloud-api/upload-grants.ts)
      await ctx.cleanup.forgetUpload(tx, key);
      if (previous) await ctx.cleanup.queue(tx, [previous.storage_key]);
      await recordEvent(tx, {
        type: 'box.uploaded',
        data: {
          organization: found.org.name,
          box: found.box!.name,
          version: found.version!.version_number,
          provider: found.provider!.name,
          architecture: architecture.name,
          file_name: input.fileName,
          sha256: stored.sha256,
          size: stored.size,
        },
      });
      return { file: file.f, previousKey: previous?.storage_key };
    });
    if (result.previousKey) await ctx.cleanup.deleteNow([result.previousKey]);
    return { file: result.file, replaced: result.previousKey !== undefined };
  } catch (error) {
    log.info({ key }, 'upload not committed; deleting its object');
    await ctx.cleanup.discardUpload(key);
    throw error;
  }
}

/** A body whose name and checksum are known before it is read (the raw upload route): store, then commit. */
export async function receiveUpload(
  ctx: ServiceContext,
  found: Found,
  input: UploadInput,
  log: FastifyBaseLogger,
): Promise<{ file: BoxFile; replaced: boolean }> {
  const stored = await storeUpload(ctx, input);
  return commitUpload(ctx, found, stored, { fileName: input.fileName, checksum: verifyFinalChecksum(stored, input.checksum), replace: input.replace }, log);
}
