// Resumable uploads, tus 1.0 (https://tus.io/protocols/resumable-upload) with the extensions creation,
// creation-with-upload, expiration, termination and checksum (sha1, sha256), at /api/uploads:
//   OPTIONS /api/uploads          what the server speaks (Tus-Version, Tus-Extension, Tus-Max-Size, ...)
//   POST    /api/uploads          creates an upload (Upload-Length, Upload-Metadata naming the destination),
//                                 optionally with its first bytes; 201 + Location
//   HEAD    /api/uploads/{id}     Upload-Offset to resume from
//   PATCH   /api/uploads/{id}     bytes at Upload-Offset (application/offset+octet-stream); 204 + new offset
//   DELETE  /api/uploads/{id}     terminates it; its bytes go
// Where the file goes: Upload-Metadata `path` (the file's share path), or `filename` (or `name`) inside `folder`
// (default `/`). The write grant (write-access.ts) is checked at creation and again at completion. Every answer
// carries Tus-Resumable; the one that completes the upload also Upload-File-Sha256 (the stored file's sha256);
// errors have the service's error shape.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { badRequest, conflict, declaredLength, HttpError, notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { refuse } from '../auth/principal.ts';
import { joinPath, validateName, validateSharePath } from '../paths/share-path.ts';
import { receive, type Chunk, type ReceiveDeps } from './receive.ts';
import {
  CHECKSUM_ALGORITHMS,
  integerHeader,
  isOffsetStream,
  parseChecksum,
  parseMetadata,
  requireOffsetStream,
  requireTusVersion,
  TUS_EXTENSIONS,
  TUS_VERSION,
} from './tus-headers.ts';
import { createHandoffs } from './handoff.ts';
import { createRunningHashes } from './running-hash.ts';
import { createUploadRows, type UploadRow } from './upload-rows.ts';
import { ownerOf, type WriteAccess } from './write-access.ts';

export const TUS_ENDPOINT = '/api/uploads';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ResumableOptions extends Omit<ReceiveDeps, 'rows' | 'hashes' | 'handoffs' | 'log'> {
  /** uploads.max_bytes: Tus-Max-Size. */
  maxBytes: number;
  expiresAfterSeconds: number;
  /** Below uploads.abandoned_after_seconds (a minute, for the S3 upload started just before the row): no upload lives longer, the sweep of interrupted S3 uploads would end it. */
  maxAgeSeconds: number;
  /** Who may write where, for this request (write-access.ts). */
  writeAccess(request: FastifyRequest): WriteAccess;
  /** How often expired uploads are ended (default one minute). */
  expireIntervalMs?: number;
  /** Another mount of the same protocol (a file request's `/-/tus/:token`), with what differs there. */
  mount?: UploadMount;
}

/**
 * What a second mount of the endpoint decides for itself (a file request: shares/request-tus.ts). Everything
 * else — leases, chunks, checksums, completion — is the same code.
 */
export interface UploadMount {
  /** The route prefix (Fastify syntax) and, per request, the URL prefix of its uploads (Location). */
  endpoint: string;
  base(request: FastifyRequest): string;
  /** Who continues uploads made through this request; undefined asks the caller to authenticate (401). */
  owner(request: FastifyRequest): string | undefined;
  /** The file's share path named by Upload-Metadata. */
  destination(request: FastifyRequest, metadata: Record<string, string>): string;
  /** Before an upload is created (a use of the link is taken) and, when the creation then failed, undone. */
  reserve(request: FastifyRequest): Promise<void>;
  unreserve(request: FastifyRequest): Promise<void>;
  /** The id the upload row keeps of what it reserved (returned when the upload ends without landing). */
  reservation(request: FastifyRequest): string | null;
  /** Called every lease renewal while a PATCH streams: a throw stops the PATCH with that error. */
  recheck(request: FastifyRequest): Promise<void>;
  /** A file landed through this request. */
  landed(request: FastifyRequest, row: UploadRow, sha256: string): Promise<void>;
  /** A refusal as this mount's callers may see it. */
  refine(request: FastifyRequest, error: unknown): unknown;
}

/** What each tus route may answer, for the OpenAPI description (401/403 and the common ones are added centrally). */
const TUS_ERRORS: Record<number, string> = {
  404: "No such upload (unknown, or another caller's)",
  409: "Upload-Offset differs from the upload's offset, or the destination is a folder",
  410: 'The upload was terminated or has expired',
  412: 'Tus-Resumable is missing or names another version (Tus-Version lists ours)',
  423: 'Another request is writing to this upload; retry',
  460: 'Upload-Checksum mismatch: the chunk was dropped, the offset is unchanged',
};
const documented = (summary: string, success: number, description: string, errors: number[]) => ({
  schema: {
    summary,
    tags: ['uploads'],
    response: { [success]: { description }, ...Object.fromEntries(errors.map((status) => [status, { description: TUS_ERRORS[status] }])) },
  },
});

/** The file's share path named by Upload-Metadata. */
function destinationOf(metadata: Record<string, string>): string {
  if (metadata.path !== undefined) {
    const path = validateSharePath(metadata.path, '/Upload-Metadata/path');
    if (path === '/') throw badRequest('Upload-Metadata path names the share root, not a file');
    return path;
  }
  const name = metadata.filename ?? metadata.name;
  if (name === undefined) throw badRequest('Upload-Metadata names the destination: `path`, or `filename` (and optionally `folder`)');
  const folder = metadata.folder === undefined ? '/' : validateSharePath(metadata.folder, '/Upload-Metadata/folder');
  return joinPath(folder, validateName(name, '/Upload-Metadata/filename'));
}

/** Offset and expiry; the request that completed the upload also names the stored file's sha256. */
const uploadHeaders = (row: UploadRow, sha256?: string) => ({
  'upload-offset': String(row.state === 'done' ? row.length : row.received),
  'upload-expires': new Date(row.expires_at).toUTCString(),
  ...(sha256 ? { 'upload-file-sha256': sha256 } : {}),
});

/** /api/uploads: a signed-in caller or an API key, the file's path from `path` or `filename` in `folder`. */
const signedIn = {
  base: () => TUS_ENDPOINT,
  owner: (request: FastifyRequest) => ownerOf(request.principal),
  destination: (_request: FastifyRequest, metadata: Record<string, string>) => destinationOf(metadata),
  reservation: () => null,
};

function idOf(request: FastifyRequest): string {
  const { id } = request.params as { id: string };
  if (!UUID.test(id)) throw notFound('No such upload');
  return id;
}

/** The request's body when it has one (a stream: the parsers below never buffer). */
const bodyOf = (request: FastifyRequest): Readable | undefined => (request.body as Readable | undefined) ?? undefined;

export async function resumableRoutes(app: FastifyInstance, options: ResumableOptions): Promise<void> {
  const { mount } = options;
  const endpoint = mount?.endpoint ?? TUS_ENDPOINT;
  const at = mount ?? signedIn;
  const rows = createUploadRows(options.pool, options.expiresAfterSeconds, options.maxAgeSeconds);
  const deps: ReceiveDeps = { ...options, rows, hashes: createRunningHashes(), handoffs: createHandoffs(), log: app.log };
  /** Who is asking: an anonymous caller is asked to authenticate (401), as on a plain upload. */
  const ownerOrNotFound = (request: FastifyRequest): string => {
    const owner = at.owner(request);
    if (!owner) throw refuse(request.principal, 'No such upload');
    return owner;
  };
  /** receive() for this request: the mount's recheck while bytes stream, its `landed` once the file is there. */
  const receiveFor = async (request: FastifyRequest, id: string, owner: string, offset: number, chunk: Chunk) => {
    const after = await receive(deps, id, owner, offset, chunk, options.writeAccess(request), mount ? () => mount.recheck(request) : undefined);
    if (after.sha256 && mount) await mount.landed(request, after.row, after.sha256);
    return after;
  };
  type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;
  const refined = (handler: Handler): Handler =>
    mount
      ? async (request, reply) =>
          handler(request, reply).catch((error: unknown) => {
            throw mount.refine(request, error);
          })
      : handler;
  // Every body reaches the handlers as a stream; a type other than offset+octet-stream is answered 415 there.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  app.addHook('onSend', async (_request, reply) => {
    reply.header('tus-resumable', TUS_VERSION);
  });
  // One timer per process is enough: a second mount shares the table.
  if (!mount) startExpiry(app, rows, options);

  const tusOptions = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply
      .status(204)
      .headers({
        'tus-version': TUS_VERSION,
        'tus-extension': TUS_EXTENSIONS,
        'tus-max-size': String(options.maxBytes),
        'tus-checksum-algorithm': CHECKSUM_ALGORITHMS.join(','),
      })
      .send();
  const hidden = { schema: { hide: true } };
  app.options(endpoint, hidden, tusOptions);
  app.options(`${endpoint}/:id`, hidden, tusOptions);

  const creation = documented(
    mount ? 'Create a resumable upload through a file request (tus 1.0)' : 'Create a resumable upload (tus 1.0 creation, creation-with-upload)',
    201,
    'Created: Location, Upload-Offset, Upload-Expires',
    [409, 412, 423, 460],
  );
  app.post(
    endpoint,
    creation,
    refined(async (request, reply) => {
      requireTusVersion(request.headers);
      const body = bodyOf(request);
      if (body && !isOffsetStream(request.headers)) {
        body.resume();
        throw new HttpError(415, 'The bytes sent with a creation request are Content-Type: application/offset+octet-stream');
      }
      const row = await create(request, options, rows, body);
      const after = body || row.length === 0 ? await receiveFor(request, row.id, row.owner, 0, chunkOf(request, body)) : { row };
      return reply
        .status(201)
        .headers({ location: `${at.base(request)}/${row.id}`, ...uploadHeaders(after.row, after.sha256) })
        .send();
    }),
  );

  app.head(
    `${endpoint}/:id`,
    hidden,
    refined(async (request, reply) => {
      requireTusVersion(request.headers);
      const owner = ownerOrNotFound(request);
      let row = await rows.visible(idOf(request), owner);
      // Every byte arrived but the completion did not happen (refused, or its replica died): a client that sees the
      // full offset sends nothing more, so the completion is tried again here, with the grant checked as then.
      if (row.state === 'active' && row.received === row.length && !row.leased) {
        row = (await receiveFor(request, row.id, owner, row.length, { body: undefined, size: 0 })).row;
      }
      return reply
        .status(200)
        .headers({ ...uploadHeaders(row), 'upload-length': String(row.length), 'cache-control': 'no-store' })
        .send();
    }),
  );

  const patch = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = bodyOf(request);
    try {
      requireTusVersion(request.headers);
      requireOffsetStream(request.headers);
    } catch (error) {
      body?.resume();
      throw error;
    }
    const offset = integerHeader(request.headers, 'upload-offset');
    if (offset === undefined) throw badRequest('Upload-Offset is required');
    const owner = ownerOrNotFound(request);
    // No read first: the lease is taken only by the owner and, when refused, says why (404, 410, 409, 423).
    const after = await receiveFor(request, idOf(request), owner, offset, chunkOf(request, body));
    return reply.status(204).headers(uploadHeaders(after.row, after.sha256)).send();
  };
  const terminate = async (request: FastifyRequest, reply: FastifyReply) => {
    requireTusVersion(request.headers);
    const id = idOf(request);
    const row = await rows.visible(id, ownerOrNotFound(request));
    // A finished upload is a file of the share now: DELETE /{path} removes it, not this.
    if (row.state === 'active' && (await rows.end(id, 'terminated'))) void options.sweeper.sweepNow();
    return reply.status(204).send();
  };
  // The chunks of an upload its creation admitted are not counted by the rate limit (the creation is): a 5 GiB
  // file in 8 MiB chunks is 640 PATCHes, far beyond the default 100 requests per 10 minutes.
  const unmetered = { rateLimit: false as const };
  app.patch(
    `${endpoint}/:id`,
    {
      ...documented('Send bytes of a resumable upload at Upload-Offset', 204, 'Stored: the new Upload-Offset', [404, 409, 410, 412, 423, 460]),
      config: unmetered,
    },
    refined(patch),
  );
  app.delete(`${endpoint}/:id`, documented('Terminate a resumable upload', 204, 'Terminated; its bytes go', [404, 410, 412]), refined(terminate));
  // X-HTTP-Method-Override, for clients whose environment only sends GET and POST.
  app.post(
    `${endpoint}/:id`,
    { ...hidden, config: unmetered },
    refined(async (request, reply) => {
      const method = String(request.headers['x-http-method-override'] ?? '').toUpperCase();
      if (method === 'PATCH') return patch(request, reply);
      if (method === 'DELETE') return terminate(request, reply);
      bodyOf(request)?.resume();
      throw new HttpError(405, 'POST to an upload needs X-HTTP-Method-Override: PATCH or DELETE', { headers: { allow: 'HEAD, PATCH, DELETE, OPTIONS' } });
    }),
  );
}

function chunkOf(request: FastifyRequest, body: Readable | undefined) {
  return { body, size: body ? declaredLength(request.headers) : 0, checksum: parseChecksum(request.headers) };
}

/** Creation: checks the destination and the grant before anything is stored. */
async function create(
  request: FastifyRequest,
  options: ResumableOptions,
  rows: ReturnType<typeof createUploadRows>,
  body: Readable | undefined,
): Promise<UploadRow> {
  try {
    if (request.headers['upload-defer-length'] !== undefined) throw badRequest('Upload-Defer-Length is not supported: send Upload-Length');
    const length = integerHeader(request.headers, 'upload-length');
    if (length === undefined) throw badRequest('Upload-Length is required');
    const metadata = parseMetadata(request.headers['upload-metadata'] as string | undefined);
    const path = (options.mount ?? signedIn).destination(request, metadata);
    const grant = options.writeAccess(request)(path);
    if (length > grant.maxBytes) throw new HttpError(413, `Upload-Length ${length} is larger than the limit of ${grant.maxBytes} bytes`);
    parseChecksum(request.headers); // a malformed one is refused before anything is created
    const existing = await options.tree.find(path);
    if (existing?.kind === 'dir') throw conflict(`${path} is a folder`);
    if (existing && !grant.mayReplace) throw new HttpError(403, `${path} exists; replacing a file needs the delete permission`);
    const input = { id: randomUUID(), owner: grant.owner, path, length, metadata, reservation: (options.mount ?? signedIn).reservation(request) };
    if (!options.mount) return await createRow(options, rows, input);
    await options.mount.reserve(request);
    try {
      return await createRow(options, rows, input);
    } catch (error) {
      await options.mount.unreserve(request);
      throw error;
    }
  } catch (error) {
    body?.resume();
    throw error;
  }
}

/** s3: the upload's multipart upload starts now, its final key registered for removal first (a crash leaves nothing). */
async function createRow(
  options: ResumableOptions,
  rows: ReturnType<typeof createUploadRows>,
  input: Parameters<ReturnType<typeof createUploadRows>['create']>[0],
): Promise<UploadRow> {
  const multipart = options.store.multipart;
  if (!multipart || input.length === 0) return rows.create(input);
  const storageKey = `files/${randomUUID()}`;
  await options.pool.query(sql.unsafe`insert into object_garbage (storage_key, delete_after) values (${storageKey}, now() + interval '1 day')`);
  try {
    const multipartId = await multipart.start(storageKey);
    return await rows.create({ ...input, storageKey, multipartId });
  } catch (error) {
    await options.sweeper.discardUpload(storageKey);
    throw error;
  }
}

/** Ends expired uploads on every replica (claims are row updates, so replicas never collide). */
function startExpiry(app: FastifyInstance, rows: ReturnType<typeof createUploadRows>, options: ResumableOptions): void {
  const timer = setInterval(() => {
    void rows.expire().then(
      (count) => {
        if (count > 0) void options.sweeper.sweepNow();
      },
      (error: unknown) => app.log.warn({ err: error }, 'expiring resumable uploads failed; will retry'),
    );
  }, options.expireIntervalMs ?? 60_000);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));
}
