// GetObject (whole or a byte range) as an UpstreamBody: the request goes to a presigned URL that minio-js signs
// locally (no signing code here; the Range header is not part of the signature), and an error answer becomes an
// error shaped like minio-js's (`code`, and `actualobjectsize` for InvalidRange, from the XML or the 416's
// Content-Range), so the store maps both alike.
import type { Client } from 'minio';
import type { ByteRange } from '../types.ts';
import { UpstreamBody } from './upstream-body.ts';

/**
 * How long the signed URL is valid. It is used at once, but S3 checks the expiry against its own clock, which may
 * be behind ours: header-signed requests tolerate 15 minutes of skew, so this does too.
 */
const SIGNED_URL_SECONDS = 15 * 60;
const MAX_ERROR_BODY = 64 * 1024;

/** What minio-js reports when an error answer carries no XML (a HEAD, a proxy's bare status). */
const codeByStatus: Record<number, string> = { 403: 'AccessDenied', 404: 'NotFound', 503: 'SlowDown' };

export interface GetObjectOptions {
  client: Client;
  bucket: string;
  objectName: string;
  /** undefined: the whole object; `end` undefined: to its end. */
  range?: ByteRange;
  headTimeoutMs: number;
}

export async function getObjectBody(options: GetObjectOptions): Promise<UpstreamBody> {
  const { client, bucket, objectName, range } = options;
  const url = new URL(await client.presignedGetObject(bucket, objectName, SIGNED_URL_SECONDS));
  const headers: Record<string, string> = range ? { Range: `bytes=${range.start}-${range.end ?? ''}` } : {};
  const response = await UpstreamBody.open({ url, headers, headTimeoutMs: options.headTimeoutMs });
  if (response.status === (range ? 206 : 200)) return response.body;
  const text = await response.body.text(MAX_ERROR_BODY).catch(() => '');
  if (response.status === 200) {
    // A server that ignored the Range header would have the caller send the wrong bytes as a 206.
    throw Object.assign(new Error('the storage answered a range request with the whole object'), { code: 'ServiceUnavailable' });
  }
  throw s3Error(response.status, text, response.headers.get('content-range'));
}

/** The size in a 416's `Content-Range: bytes *\/<size>` (RFC 9110), as SeaweedFS states it instead of the XML. */
function sizeInContentRange(header: string | undefined): string | undefined {
  const match = /^bytes \*\/(\d{1,16})$/.exec(header?.trim() ?? '');
  return match?.[1];
}

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

function s3Error(status: number, xml: string, contentRange: string | undefined): Error {
  const code = tag(xml, 'Code') ?? codeByStatus[status] ?? `HTTP ${status}`;
  const message = unescapeXml(tag(xml, 'Message') ?? `the storage answered ${status}`);
  const error = Object.assign(new Error(message), { name: 'S3Error', code });
  // MinIO names an unsatisfiable range's object size in the XML, SeaweedFS in the header: either spares a HEAD.
  const actualSize = tag(xml, 'ActualObjectSize') ?? (status === 416 ? sizeInContentRange(contentRange) : undefined);
  return actualSize === undefined ? error : Object.assign(error, { actualobjectsize: actualSize });
}

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
function unescapeXml(text: string): string {
  return text.replace(/&(#\d{1,6}|#x[0-9a-f]{1,6}|\w+);/gi, (whole, entity: string) => {
    if (!entity.startsWith('#')) return entities[entity] ?? whole;
    const point = /^#x/i.test(entity) ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
    return point <= 0x10ffff ? String.fromCodePoint(point) : whole;
  });
}
