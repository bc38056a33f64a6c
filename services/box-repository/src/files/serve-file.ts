// Sends a stored box file the way download tools expect: Content-Length, Accept-Ranges, a strong ETag (the quoted
// sha256), Last-Modified, Content-Disposition; one byte range (206, or 416 with `Content-Range: bytes */size`);
// If-None-Match (304) and If-Range; HEAD without touching storage. Multi-range requests get the whole file. With
// download_links.redirect_to_storage (s3 driver), a GET is answered with 302 to a short-lived presigned URL instead.
import { HttpError, parseRange, RangeNotSatisfiableError, sendStoredBody } from '@boxyard/kit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pipeline } from 'node:stream';
import { sql } from 'slonik';
import type { ServiceContext } from '../context.ts';
import type { BoxFile } from '../records.ts';

const etagOf = (file: BoxFile) => `"${file.sha256}"`;

/** If-None-Match against a strong ETag (weak comparison, as RFC 9110 says for If-None-Match). */
export function matchesAnyEtag(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

/** The file's count and its box's (which search sorts by: migration 0010), in one statement. */
const countDownloadSql = (fileId: number) => sql.unsafe`
  with counted as (update files set download_count = download_count + 1 where id = ${fileId} returning architecture_id)
  insert into box_downloads (box_id, count)
  select v.box_id, 1 from counted c join architectures a on a.id = c.architecture_id
  join providers p on p.id = a.provider_id join versions v on v.id = p.version_id
  on conflict (box_id) do update set count = box_downloads.count + 1`;

export async function serveFile(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  file: BoxFile,
  options: { isPublic: boolean },
): Promise<FastifyReply> {
  const etag = etagOf(file);
  const rangeHeader = typeof request.headers.range === 'string' ? request.headers.range : undefined;
  ctx.hooks.onDownloadRequest?.(rangeHeader);
  reply.header('etag', etag);
  reply.header('last-modified', new Date(file.updated_at).toUTCString());
  reply.header('accept-ranges', 'bytes');
  reply.header('cache-control', options.isPublic ? 'public, no-cache' : 'private, no-cache');
  reply.header('content-disposition', `attachment; filename="${file.file_name}"`);
  const ifNoneMatch = request.headers['if-none-match'];
  if (typeof ifNoneMatch === 'string' && matchesAnyEtag(ifNoneMatch, etag)) return reply.status(304).send();

  const parsed = parseRange(rangeHeader, file.size);
  const ifRange = request.headers['if-range'];
  const changedSince = typeof ifRange === 'string' && ifRange.trim() !== etag; // If-Range no longer matches: send it all
  if (parsed.kind === 'unsatisfiable' && !changedSince) {
    throw new HttpError(416, `Range not satisfiable: the file has ${file.size} bytes`, { headers: { 'content-range': `bytes */${file.size}` } });
  }
  const range = parsed.kind === 'range' && !changedSince ? parsed : undefined;
  reply.type('application/octet-stream');
  if (range) {
    reply.status(206);
    reply.header('content-range', `bytes ${range.start}-${range.end}/${file.size}`);
    reply.header('content-length', String(range.end - range.start + 1));
  } else {
    reply.header('content-length', String(file.size));
  }
  if (request.method === 'HEAD') return reply.send();

  // A download counts once, when it starts at byte 0 (resumed downloads don't count again).
  const countDownload = () => {
    if (range && range.start !== 0) return;
    void ctx.pool.query(countDownloadSql(file.id)).catch((error: unknown) => request.log.warn({ err: error }, 'download count not updated'));
  };
  if (ctx.config.download_links.redirect_to_storage && !ctx.hooks.downloadTransform) {
    // The client follows to storage with the same Range header; the presigned URL is signed locally (no request).
    const location = await ctx.store.presignedGetUrl(file.storage_key, ctx.config.download_links.storage_url_ttl_seconds);
    if (location) {
      countDownload();
      for (const name of ['content-length', 'content-range', 'content-type', 'accept-ranges', 'content-disposition']) reply.removeHeader(name);
      reply.header('cache-control', 'private, no-store'); // the location expires: never cache the redirect
      return reply.redirect(location, 302);
    }
  }

  let body;
  try {
    body = await ctx.store.get(file.storage_key, range ? { start: range.start, end: range.end } : undefined);
  } catch (error) {
    if (error instanceof RangeNotSatisfiableError) {
      throw new HttpError(416, `Range not satisfiable: the file has ${error.size} bytes`, { headers: { 'content-range': `bytes */${error.size}` } });
    }
    throw error;
  }
  countDownload();
  const transform = ctx.hooks.downloadTransform?.();
  if (!transform) return sendStoredBody(request, reply, body);
  pipeline(body, transform, () => {}); // errors travel both ways; the reply sees the transform's
  return reply.send(transform);
}
