// GET/HEAD of a file: metadata from PostgreSQL, bytes streamed from the object store. Strong ETag = the sha256,
// Last-Modified = mtime, conditional requests (If-None-Match, If-Modified-Since, If-Range) and one byte range.
import { HttpError, ObjectNotFoundError, parseRange, RangeNotSatisfiableError, sendStoredBody, type ObjectStore } from '@boxyard/kit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { contentTypeFor } from '../http/content-types.ts';
import type { Entry } from '../tree/tree-store.ts';

/** Uploaded content is shown, never executed in our origin. */
export const FILE_SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox",
};

const etagOf = (entry: Entry) => `"${entry.sha256}"`;

export function notModified(request: FastifyRequest, entry: Entry): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etagOf(entry));
  }
  const since = Date.parse(request.headers['if-modified-since'] ?? '');
  return Number.isFinite(since) && Math.floor(entry.mtime / 1000) * 1000 <= since;
}

/** If-Range: the range applies only while the file is still the one the client has part of. */
function rangeStillValid(request: FastifyRequest, entry: Entry): boolean {
  const header = request.headers['if-range'];
  const ifRange = Array.isArray(header) ? header[0] : header;
  if (ifRange === undefined) return true;
  if (ifRange.trim().startsWith('"')) return ifRange.trim() === etagOf(entry);
  const date = Date.parse(ifRange);
  return Number.isFinite(date) && Math.floor(entry.mtime / 1000) * 1000 <= date;
}

export async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  entry: Entry,
  store: ObjectStore,
  reload: () => Promise<Entry | null>,
): Promise<FastifyReply> {
  reply.headers({
    ...FILE_SECURITY_HEADERS,
    etag: etagOf(entry),
    'last-modified': new Date(entry.mtime).toUTCString(),
    'accept-ranges': 'bytes',
    'cache-control': 'private, no-cache',
    // RFC 9530: the checksum of the whole file, so a client can verify what it assembled from ranges.
    'repr-digest': `sha-256=:${Buffer.from(entry.sha256!, 'hex').toString('base64')}:`,
  });
  if (notModified(request, entry)) return reply.status(304).send();
  reply.type(contentTypeFor(entry.name));

  const range = rangeStillValid(request, entry) ? parseRange(request.headers.range, entry.size) : { kind: 'none' as const };
  if (range.kind === 'unsatisfiable') {
    throw new HttpError(416, `Range not satisfiable for a file of ${entry.size} bytes`, { headers: { 'content-range': `bytes */${entry.size}` } });
  }
  const [start, end] = range.kind === 'range' ? [range.start, range.end] : [0, entry.size - 1];
  const length = entry.size === 0 ? 0 : end - start + 1;
  reply.header('content-length', length);
  if (range.kind === 'range') reply.status(206).header('content-range', `bytes ${start}-${end}/${entry.size}`);
  // An empty stream, not an empty body: fastify's HEAD handling would otherwise reset Content-Length to 0.
  if (request.method === 'HEAD' || length === 0) return reply.send(Readable.from([]));

  let stream: Readable;
  try {
    stream = await store.get(entry.storage_key!, range.kind === 'range' ? { start, end } : undefined);
  } catch (error) {
    // The file was replaced or deleted between reading its record and opening its bytes: read the record again.
    if (error instanceof ObjectNotFoundError || error instanceof RangeNotSatisfiableError) {
      const current = await reload();
      if (current?.kind === 'file' && current.storage_key !== entry.storage_key) return sendFile(request, reply, current, store, async () => null);
      throw new HttpError(404, `${entry.path} does not exist`);
    }
    throw error;
  }
  return sendStoredBody(request, reply, stream);
}
