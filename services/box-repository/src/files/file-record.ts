// What the file routes share: the path of an architecture and a file's record with its stable download URL.
import type { FastifyRequest } from 'fastify';
import type { Found } from '../access/hierarchy.ts';
import type { ServiceContext } from '../context.ts';
import { baseUrlOf, downloadUrl } from '../http/base-url.ts';
import { toFileRecord, type BoxFile } from '../records.ts';

export type ArchParams = { org: string; box: string; version: string; provider: string; arch: string };
/** The path parameters of ARCH_PREFIX. */
export const ARCH_PARAMS = ['org', 'box', 'version', 'provider', 'arch'] as const;

export function fileRecord(ctx: ServiceContext, request: FastifyRequest, found: Found, file: BoxFile) {
  return toFileRecord(
    file,
    downloadUrl(baseUrlOf(ctx, request), {
      org: found.org.name,
      box: found.box!.name,
      version: found.version!.version_number,
      provider: found.provider!.name,
      arch: found.architecture!.name,
      fileName: file.file_name,
    }),
  );
}
