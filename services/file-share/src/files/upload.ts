// POST /{path} with multipart part `file`: the part is streamed into the object store under a fresh opaque key
// (`files/<uuid>`) with the size limit and sha256 computed on the way; once the whole request has been read,
// one transaction makes the path point at it (new file, or replacing the old bytes in one step). A failed, cut-off or refused upload leaves
// no record and no object: the key is registered as garbage before the first byte and only leaves that list
// in the commit.
//
// The bytes may also be the request body itself (`Content-Type: application/octet-stream`; the console sends the
// browser's File object this way, `curl --data-binary @file` too): then the URL must name the file.
//
// Which name: the URL path is the file's path (`POST /docs/a.txt`). When the URL names a folder — the root,
// a path ending in `/`, or an existing folder — the file goes into it under the part's filename (the HTML form
// and `curl -F file=@a.txt http://host/docs/` both work). Missing parent folders are created.
import { badRequest, conflict, declaredLength, HttpError, StorageError, type ObjectStore } from '@boxyard/kit';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { requirePermission, type Principal } from '../auth/principal.ts';
import { checkNewPath, joinPath, validateName, type SharePath } from '../paths/share-path.ts';
import type { Tree, UploadResult } from '../tree/tree-store.ts';

/**
 * A raw upload declaring at most this many bytes is stored before its path is looked up: the commit checks the
 * path anyway, under the tree's lock. The early lookup was the one query each upload made on its own (the others
 * are shared by the uploads that arrive together): 1 of the 2.2 transactions per 10 KiB upload at 8 clients.
 */
export const LOOKUP_FIRST_ABOVE_BYTES = 256 * 1024;

export interface UploadDeps {
  store: ObjectStore;
  tree: Tree;
  maxBytes: number;
  /** A fresh object key, on the garbage list before its first byte is stored (sweeper.ts newUploadKey). */
  newUploadKey(): Promise<string>;
  /** Removes the bytes of an upload that did not commit (once no entry refers to them). */
  discardUpload(key: string): Promise<void>;
}

/** A multipart parser failure: a limit keeps its status (413), anything else is the caller's malformed body. */
function malformed(error: unknown): unknown {
  if (error instanceof HttpError || typeof (error as { statusCode?: unknown }).statusCode === 'number') return error;
  return new HttpError(400, `Malformed multipart/form-data body: ${(error as Error).message}`);
}

/** Drains a part we don't store, so the parser can move on to the next one. */
async function discard(part: MultipartFile): Promise<void> {
  part.file.resume();
  await new Promise<void>((resolve) => {
    if (part.file.readableEnded) resolve();
    else
      part.file
        .once('end', resolve)
        .once('error', () => resolve())
        .once('close', resolve);
  });
}

interface StoredPart {
  path: string;
  storageKey: string;
  size: number;
  sha256: string;
  mayReplace: boolean;
}

export async function handleUpload(request: FastifyRequest, target: SharePath, principal: Principal, deps: UploadDeps): Promise<UploadResult> {
  const existing = await deps.tree.find(target.path);
  const intoDirectory = target.path === '/' || target.trailingSlash || existing?.kind === 'dir';
  requirePermission(principal, 'uploads', target.path);

  let stored: StoredPart | undefined;
  try {
    const parts = request.parts();
    for (;;) {
      let next: IteratorResult<Multipart>;
      try {
        next = await parts.next();
      } catch (error) {
        throw malformed(error);
      }
      if (next.done) break;
      const part = next.value;
      if (part.type !== 'file' || part.fieldname !== 'file') {
        if (part.type === 'file') await discard(part);
        continue;
      }
      if (stored) {
        await discard(part);
        throw badRequest('Send exactly one part named "file"');
      }
      const path = intoDirectory ? joinPath(target.path, validateName(part.filename, '/file/filename')) : target.path;
      checkNewPath(path);
      requirePermission(principal, 'uploads', path);
      // Refuse before reading the bytes when we already know the answer (checked again in the commit).
      const current = path === target.path ? existing : await deps.tree.find(path);
      const mayReplace = principal.permissions.has('delete');
      if (current?.kind === 'dir') {
        await discard(part);
        throw conflict(`${path} is a folder`);
      }
      if (current && !mayReplace) {
        await discard(part);
        throw new HttpError(403, `${path} exists; replacing a file needs the delete permission`);
      }
      let bodyFailed = false;
      part.file.once('error', () => (bodyFailed = true));
      stored = await storeBytes(part.file, deps).then(
        (bytes) => ({ ...bytes, path, mayReplace }),
        (error: unknown) => {
          // The body broke off (client gone, malformed multipart): nothing was stored, and it's not a server error.
          // A storage failure stays what it is (a 503 for an unwritable disk), whatever it did to the body.
          if (error instanceof HttpError || error instanceof StorageError) throw error;
          if (bodyFailed || request.raw.destroyed || (error as { code?: string }).code === 'ECONNRESET') {
            throw new HttpError(400, 'The upload was interrupted or malformed before it completed; nothing was stored');
          }
          throw error;
        },
      );
    }
    if (!stored) throw badRequest('No multipart part named "file" with a file in it');
    // The whole request has been read and was valid: now the path points at the new bytes.
    return await deps.tree.commitUpload({ ...stored, userId: principal.user?.id ?? null });
  } catch (error) {
    if (stored) await deps.discardUpload(stored.storageKey);
    throw error;
  }
}

/** Streams bytes into a fresh opaque key: size limit and sha256 on the way; nothing is left on failure. */
async function storeBytes(
  body: Readable & { truncated?: boolean },
  deps: UploadDeps,
  size?: number,
): Promise<{ storageKey: string; size: number; sha256: string }> {
  // Registered first: if this process dies mid-way, the sweeper removes whatever was stored.
  const storageKey = await deps.newUploadKey();
  try {
    const result = await deps.store.put(storageKey, body, {
      maxBytes: deps.maxBytes,
      contentType: 'application/octet-stream',
      ...(size !== undefined ? { size } : {}),
    });
    // busboy ends a part cleanly at its own limit; ours is lower, so this only guards a misconfiguration.
    if (body.truncated) throw new HttpError(413, `File is larger than the limit of ${deps.maxBytes} bytes`);
    return { storageKey, size: result.size, sha256: result.sha256 };
  } catch (error) {
    await deps.discardUpload(storageKey);
    if ((error as { statusCode?: number }).statusCode === 413) throw new HttpError(413, `File is larger than the limit of ${deps.maxBytes} bytes`);
    throw error;
  }
}

/**
 * POST /{path} with the bytes as the body (application/octet-stream): the URL names the file. Same rules as a
 * multipart upload (permissions, replacing needs delete, size limit while streaming, atomic commit).
 */
export async function handleRawUpload(request: FastifyRequest, target: SharePath, principal: Principal, deps: UploadDeps): Promise<UploadResult> {
  const body = request.body as Readable;
  // Refused before reading: the rest of the body is drained so the connection stays usable.
  const refuse = (error: unknown): never => {
    body.resume();
    throw error;
  };
  try {
    requirePermission(principal, 'uploads', target.path);
    if (target.path === '/' || target.trailingSlash)
      throw badRequest('An application/octet-stream upload names the file in the URL (POST /folder/name.ext); to upload into a folder use multipart/form-data');
    checkNewPath(target.path);
  } catch (error) {
    refuse(error);
  }
  const declared = declaredLength(request.headers);
  // Too big by its own account: answered at once, and the connection closed rather than the body read.
  if (declared !== undefined && declared > deps.maxBytes)
    throw new HttpError(413, `File is larger than the limit of ${deps.maxBytes} bytes`, { headers: { connection: 'close' } });
  const mayReplace = principal.permissions.has('delete');
  // Refused before reading when the path says so, unless the body is small: then storing it and letting the commit
  // refuse (same status, same words; the bytes are discarded) costs less than a lookup on every upload.
  if (declared === undefined || declared > LOOKUP_FIRST_ABOVE_BYTES) {
    const existing = await deps.tree.find(target.path);
    if (existing?.kind === 'dir') refuse(conflict(`${target.path} is a folder`));
    if (existing && !mayReplace) refuse(new HttpError(403, `${target.path} exists; replacing a file needs the delete permission`));
  }

  let bodyFailed = false;
  body.once('error', () => (bodyFailed = true));
  const bytes = await storeBytes(body, deps, declared).catch((error: unknown) => {
    if (error instanceof HttpError || error instanceof StorageError) throw error;
    if (bodyFailed || request.raw.destroyed || (error as { code?: string }).code === 'ECONNRESET') {
      throw new HttpError(400, 'The upload was interrupted before it completed; nothing was stored');
    }
    throw error;
  });
  try {
    return await deps.tree.commitUpload({ path: target.path, ...bytes, mayReplace, userId: principal.user?.id ?? null });
  } catch (error) {
    await deps.discardUpload(bytes.storageKey);
    throw error;
  }
}
