// Uploads through a file request. `requestWrite` is the one decision of who may write where through a request link:
// the plain uploads below call it, and a resumable (tus) upload through a link calls it at creation and again at
// completion. It gives the destination and a principal holding only `uploads` inside the request's folder (no
// `delete`, so an existing name is refused, never replaced); the share's own upload code then applies its usual
// rules with it. A "use" of a request is one file that landed: a use is taken before the bytes are read (so two
// replicas can never both take the last one) and given back when the upload fails.
import { HttpError, type ObjectStore } from '@boxyard/kit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DatabasePool } from 'slonik';
import type { Principal } from '../auth/principal.ts';
import { entryView } from '../files/entry-view.ts';
import { handleRawUpload, handleUpload } from '../files/upload.ts';
import { ok } from '../http/envelope.ts';
import { wantsHtmlPage } from '../http/negotiate.ts';
import type { Sweeper } from '../maintenance/sweeper.ts';
import { checkNewPath, joinPath, validateName, type SharePath } from '../paths/share-path.ts';
import type { Tree } from '../tree/tree-store.ts';
import type { Activity } from './activity.ts';
import { gone, linkPrincipal, requireActive } from './link-access.ts';
import type { LinkWithCreator, ShareStore } from './share-store.ts';

export interface RequestWrite {
  /** The folder the request fills. */
  folder: string;
  /** The file's share path, when its name is known (it is not yet for a multipart upload into the folder). */
  path: string | undefined;
  /** Holds `uploads` inside `folder` only: never `delete`, never above the folder. */
  principal: Principal;
  /** The largest file accepted: the request's own limit within uploads.max_bytes. */
  maxBytes: number;
}

/**
 * Who may write where through a request link: 410 when the link is revoked, expired, used up or its creator lost
 * `uploads` there; 403 for a share link (read-only) or a name below a subfolder; 400 for a name the share's rules
 * refuse. `name` is the file's name inside the request's folder (undefined: given later, e.g. by a multipart part).
 * `holdsUse`: the upload already took its use (a resumable one, at creation), so "used up" does not stop it.
 */
export function requestWrite(link: LinkWithCreator, name: string | undefined, maxUploadBytes: number, holdsUse = false): RequestWrite {
  requireActive(link, holdsUse);
  if (link.kind !== 'request' || link.entry_kind !== 'dir') throw new HttpError(403, 'This link does not accept uploads');
  let path: string | undefined;
  if (name !== undefined) {
    path = joinPath(link.path, validateName(name, '/name'));
    checkNewPath(path);
  }
  const maxBytes = Math.min(maxUploadBytes, link.max_file_bytes ?? maxUploadBytes);
  return { folder: link.path, path, principal: linkPrincipal(link), maxBytes };
}

/** The name a request URL gives (`/-/s/<token>/<name>`), or undefined for the folder itself; deeper paths are refused. */
export function requestName(relative: SharePath): string | undefined {
  if (relative.segments.length === 0) return undefined;
  if (relative.segments.length > 1 || relative.trailingSlash) throw new HttpError(403, 'A file request accepts files into its own folder only');
  return relative.segments[0];
}

/** An upload's refusal as a visitor of the link may see it: a taken name is a 409, paths relative to the folder. */
export function asLinkError(error: unknown, link: LinkWithCreator): unknown {
  // The share's own message speaks of the delete permission; through a link a taken name is simply refused.
  if (error instanceof HttpError && error.statusCode === 403 && error.message.includes('exists'))
    return new HttpError(409, 'A file of that name is already there; choose another name');
  // Messages name paths: through a link, only the part below the request's folder.
  if (error instanceof HttpError && link.path !== '/' && error.message.includes(link.path)) {
    return new HttpError(error.statusCode, error.message.split(`${link.path}/`).join('').split(link.path).join('the folder'), {
      errors: error.errors,
      headers: error.headers,
    });
  }
  return error;
}

export interface RequestUploadDeps {
  pool: DatabasePool;
  store: ObjectStore;
  tree: Tree;
  sweeper: Sweeper;
  shares: ShareStore;
  activity: Activity;
  maxUploadBytes: number;
}

/** POST through a request link: multipart (part `file`, into the folder or at the URL's name) or the raw bytes at a name. */
export async function handleRequestUpload(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RequestUploadDeps,
  link: LinkWithCreator,
  relative: SharePath,
): Promise<FastifyReply> {
  const write = requestWrite(link, requestName(relative), deps.maxUploadBytes);
  const raw = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === 'application/octet-stream';
  if (!raw && !request.isMultipart())
    throw new HttpError(415, 'Send the file as multipart/form-data (part "file") or as application/octet-stream to /-/s/<link>/<name>');
  if (!(await deps.shares.takeUse(link.id))) {
    (request.raw as { resume?: () => void }).resume?.();
    throw gone('exhausted');
  }
  const target: SharePath =
    write.path === undefined ? { segments: [], path: write.folder, trailingSlash: true } : { segments: [], path: write.path, trailingSlash: false };
  let result;
  try {
    result = await (raw ? handleRawUpload : handleUpload)(request, target, write.principal, {
      store: deps.store,
      tree: deps.tree,
      maxBytes: write.maxBytes,
      newUploadKey: deps.sweeper.newUploadKey,
      discardUpload: deps.sweeper.discardUpload,
    });
  } catch (error) {
    await deps.shares.returnUse(link.id);
    throw asLinkError(error, link);
  }
  const { entry } = result;
  await deps.shares.recordArrival(link.id, { path: entry.path, size: entry.size, sha256: entry.sha256!, address: request.ip });
  await deps.activity.arrived(link, { path: entry.path, size: entry.size, sha256: entry.sha256! });
  if (wantsHtmlPage(request.headers.accept)) return reply.redirect(`./?received=${encodeURIComponent(entry.name)}`, 303);
  // The name, size and checksum: never the folder's place in the share.
  const { name, size, mtime, checksum } = entryView(entry);
  return reply.status(201).send(ok('File received', { file: { name, size, mtime, checksum } }));
}
