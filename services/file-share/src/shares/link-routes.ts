// The public side of links, outside the share's own credential check (a link's Basic password is no account's):
//   GET/HEAD /-/s/<token>[/<path>]   a shared file (Range), or a shared folder's listing (HTML or JSON) and its files;
//                                    a file request's upload page
//   POST     /-/s/<token>[/<name>]   a file request's upload (multipart or raw bytes), or the password form
//   GET      /-/zip/<token>/[<path>/] a shared folder (or a folder in it) as a streamed .zip
// Paths below the token go through the share's one path parser (paths/share-path.ts: `..`, `.`, encoded slashes,
// double encoding, control characters refused with 400) and are then joined below the link's entry, so no request
// can name anything outside it. Answers name paths relative to the link, never where it sits in the share.
import { HttpError, ignoreError, notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notModified, sendFile } from '../files/download.ts';
import { entryView } from '../files/entry-view.ts';
import { DEFAULT_HTML_LIMIT, DEFAULT_JSON_LIMIT, MAX_LIMIT, MAX_PAGE, rawPathOf } from '../files/share-request.ts';
import { listingFormat, wantsHtmlPage } from '../http/negotiate.ts';
import { sendPage } from '../console/page-security.ts';
import { encodePath, parseRequestPath, type SharePath } from '../paths/share-path.ts';
import type { Entry } from '../tree/tree-store.ts';
import type { Refusal } from './activity.ts';
import { linkState, gone } from './link-access.ts';
import { LINK_REALM, passwordGate, setLinkCookie, tryPassword, type PasswordGate } from './link-password.ts';
import { renderLinkListing, renderPasswordPage, renderRefusalPage, renderRequestPage } from './link-pages.ts';
import { attachment, sendZip } from './link-zip.ts';
import { handleRequestUpload, type RequestUploadDeps } from './request-upload.ts';
import { TUS_LINK_PREFIX } from './request-tus.ts';
import { TOKEN_PATTERN, type LinkWithCreator } from './share-store.ts';

export const LINK_PREFIX = '/-/s/';
export const ZIP_PREFIX = '/-/zip/';

export interface LinkRoutesOptions extends RequestUploadDeps {
  gate: PasswordGate;
  /** Whether cookies set for this request must be Secure (the session cookie's policy). */
  secureCookies(request: FastifyRequest): boolean;
}

interface Opened {
  link: LinkWithCreator;
  /** The path below the token; undefined when the URL stops at the token (no slash). */
  relative: SharePath | undefined;
  pathname: string;
  search: string;
}

/** The link a URL names and the path below it; 404 for an unknown token, 410 for a link that may not be used. */
async function openLink(options: LinkRoutesOptions, request: FastifyRequest, prefix: string): Promise<Opened> {
  const { pathname, search } = rawPathOf(request);
  const rest = pathname.slice(prefix.length);
  const slash = rest.indexOf('/');
  const token = slash === -1 ? rest : rest.slice(0, slash);
  const refuse = (reason: Refusal, error: HttpError) => {
    options.activity.refused(reason);
    return error;
  };
  const link = TOKEN_PATTERN.test(token) ? await options.shares.byToken(token) : null;
  if (!link) throw refuse('unknown', notFound('No such link'));
  const relative = slash === -1 ? undefined : parseRequestPath(rest.slice(slash));
  const state = linkState(link);
  if (state !== 'active') throw refuse(state, gone(state));
  return { link, relative, pathname, search };
}

/**
 * Lets the request through the link's password: true when it may go on; otherwise the browser has been sent the form
 * (false), or a tool gets a Basic challenge (401 thrown). A boolean, not the reply: a reply is thenable, and an async
 * function returning it would resolve to undefined.
 */
async function unlock(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply, link: LinkWithCreator): Promise<boolean> {
  let outcome;
  try {
    outcome = await passwordGate(options.gate, link, request, () => options.activity.refused('wrong-password'));
  } catch (error) {
    if (error instanceof HttpError && error.statusCode === 429) options.activity.refused('throttled');
    throw error;
  }
  if (outcome !== 'missing') return true;
  // A browser gets the form (no Basic challenge, so it shows the page rather than its own prompt).
  if (wantsHtmlPage(request.headers.accept)) {
    sendPage(reply.header('cache-control', 'no-store'), renderPasswordPage(), 401);
    return false;
  }
  throw new HttpError(401, 'This link needs its password (HTTP Basic, any user name)', { headers: { 'www-authenticate': LINK_REALM } });
}

/** The share path a relative path names below a folder link. */
const below = (folder: string, relative: SharePath) => (relative.path === '/' ? folder : folder === '/' ? relative.path : `${folder}${relative.path}`);
/** A share path as the link shows it: relative to the link's folder. */
const relativeTo = (folder: string, path: string) => (path === folder ? '/' : folder === '/' ? path : path.slice(folder.length));
/** The name a folder goes by in a link's pages and zips (`share` for the share's root). */
const nameOf = (path: string) => (path === '/' ? 'share' : path.slice(path.lastIndexOf('/') + 1));

function pageOf(request: FastifyRequest, format: 'json' | 'html'): { page: number; limit: number } {
  const query = request.query as { page?: string; limit?: string };
  const number = (value: string | undefined, fallback: number, max: number, name: string) => {
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || parsed < 1 || parsed > max) throw new HttpError(400, `${name} must be an integer from 1 to ${max}`);
    return parsed;
  };
  return {
    page: number(query.page, 1, MAX_PAGE, 'page'),
    limit: number(query.limit, format === 'json' ? DEFAULT_JSON_LIMIT : DEFAULT_HTML_LIMIT, MAX_LIMIT, 'limit'),
  };
}

async function sendListing(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply, opened: Opened, folder: Entry) {
  const { link } = opened;
  const format = listingFormat((request.query as { format?: string }).format, request.headers.accept);
  const { page, limit } = pageOf(request, format);
  const { total, entries } = await options.tree.list(folder, { offset: (page - 1) * limit, limit });
  void options.shares.touch(link.id).catch(ignoreError('last use is a hint; the download goes on'));
  const relativePath = relativeTo(link.path, folder.path);
  reply.header('vary', 'Accept').header('cache-control', 'private, no-cache');
  if (format === 'json') {
    const files = entries.map((entry) => ({ ...entryView(entry), path: relativeTo(link.path, entry.path) }));
    return reply.type('application/json; charset=utf-8').send({ success: true, message: 'Folder listing', path: relativePath, total, page, limit, files });
  }
  const zipHref = `${ZIP_PREFIX}${link.token}${encodePath(relativePath, true)}`;
  return sendPage(reply, renderLinkListing({ rootName: nameOf(link.path), relativePath, entries, total, page, limit, zipHref, expiresAt: link.expires_at }));
}

/** A file's bytes through a share link: a GET of the bytes (not HEAD, not 304) is one use. */
async function download(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply, link: LinkWithCreator, file: Entry) {
  if (request.method === 'GET' && !notModified(request, file)) {
    if (!(await options.shares.takeUse(link.id))) throw gone('exhausted');
    void options.activity.used(link, 'download');
  }
  reply.header('content-disposition', attachment(file.name).replace(/^attachment/, 'inline'));
  return sendFile(request, reply, file, options.store, () => options.tree.find(file.path));
}

async function readShare(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply, opened: Opened) {
  const { link, relative, pathname, search } = opened;
  const root = await options.tree.find(link.path);
  if (!root) throw notFound('No such link');
  if (root.kind === 'file') {
    if (relative === undefined || (relative.segments.length === 1 && relative.segments[0] === root.name && !relative.trailingSlash))
      return download(options, request, reply, link, root);
    if (relative.segments.length === 0) return reply.redirect(`${pathname}${encodeURIComponent(root.name)}${search}`, 301);
    throw notFound('Not found');
  }
  if (relative === undefined) return reply.redirect(`${pathname}/${search}`, 301);
  const entry = await options.tree.find(below(link.path, relative));
  if (!entry || (entry.kind === 'file' && relative.trailingSlash)) throw notFound(`${relative.path} does not exist`);
  if (entry.kind === 'dir' && !relative.trailingSlash) return reply.redirect(`${pathname}/${search}`, 301);
  if (entry.kind === 'file') return download(options, request, reply, link, entry);
  return sendListing(options, request, reply, opened, entry);
}

/** A request link shows its upload form (browsers) and nothing else: no listing, no download. */
async function readRequest(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply, opened: Opened) {
  const { link, relative } = opened;
  if (relative?.segments.length === 0 && wantsHtmlPage(request.headers.accept)) {
    const received = (request.query as { received?: unknown }).received;
    return sendPage(
      reply,
      renderRequestPage({
        folderName: nameOf(link.path),
        tusEndpoint: `${TUS_LINK_PREFIX}${link.token}`,
        expiresAt: link.expires_at,
        maxFileBytes: Math.min(options.maxUploadBytes, link.max_file_bytes ?? options.maxUploadBytes),
        remaining: link.max_uses === null ? null : link.max_uses - link.uses,
        received: typeof received === 'string' && received.length <= 255 ? received : undefined,
      }),
    );
  }
  options.activity.refused('not-allowed');
  throw new HttpError(403, 'This link accepts uploads only: its folder cannot be listed or downloaded');
}

async function read(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply) {
  const opened = await openLink(options, request, LINK_PREFIX);
  if (!(await unlock(options, request, reply, opened.link))) return reply;
  return opened.link.kind === 'request' ? readRequest(options, request, reply, opened) : readShare(options, request, reply, opened);
}

/** The browser's password form (urlencoded `password`): a signed cookie for the link, then back to the same URL. */
async function passwordForm(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply, opened: Opened) {
  const { link, pathname, search } = opened;
  if (link.password_hash === null) throw new HttpError(400, 'This link has no password');
  const password = (request.body as Record<string, unknown> | undefined)?.password;
  if (typeof password !== 'string' || password === '')
    return sendPage(reply.header('cache-control', 'no-store'), renderPasswordPage('Enter the password.'), 400);
  try {
    if (!(await tryPassword(options.gate, link, request, password, () => options.activity.refused('wrong-password')))) {
      return sendPage(reply.header('cache-control', 'no-store'), renderPasswordPage('Wrong password.'), 401);
    }
  } catch (error) {
    if (error instanceof HttpError && error.statusCode === 429) options.activity.refused('throttled');
    throw error;
  }
  setLinkCookie(options.gate, link, reply, options.secureCookies(request));
  return reply.header('cache-control', 'no-store').redirect(`${pathname}${search}`, 303);
}

async function post(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply) {
  const opened = await openLink(options, request, LINK_PREFIX);
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return passwordForm(options, request, reply, opened);
  if (!(await unlock(options, request, reply, opened.link))) return reply;
  if (opened.link.kind !== 'request') {
    options.activity.refused('not-allowed');
    throw new HttpError(403, 'This link is read-only');
  }
  return handleRequestUpload(request, reply, { ...options }, opened.link, opened.relative ?? { segments: [], path: '/', trailingSlash: true });
}

/** GET /-/zip/<token>/[<folder>/]: one use of the link, the folder streamed as .zip. */
async function zip(options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply) {
  const opened = await openLink(options, request, ZIP_PREFIX);
  const { link, relative } = opened;
  if (!(await unlock(options, request, reply, link))) return reply;
  if (link.kind !== 'share' || link.entry_kind !== 'dir') throw new HttpError(403, 'Only a shared folder can be downloaded as .zip');
  const folder = await options.tree.find(below(link.path, relative ?? { segments: [], path: '/', trailingSlash: true }));
  if (!folder || folder.kind !== 'dir') throw notFound(`${relative?.path ?? '/'} is not a folder of this link`);
  const name = nameOf(folder.path);
  if (request.method === 'HEAD')
    return reply
      .type('application/zip')
      .header('content-disposition', attachment(`${name}.zip`))
      .send();
  if (!(await options.shares.takeUse(link.id))) throw gone('exhausted');
  void options.activity.used(link, 'zip');
  return sendZip(reply, options, folder, name);
}

type Handler = (options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** A browser (Accept preferring HTML) gets refusals as a page; tools keep the error envelope. */
const withPages = (handler: Handler) => async (options: LinkRoutesOptions, request: FastifyRequest, reply: FastifyReply) => {
  try {
    return await handler(options, request, reply);
  } catch (error) {
    const status = error instanceof HttpError ? error.statusCode : 0;
    if (![403, 404, 410].includes(status) || !wantsHtmlPage(request.headers.accept) || reply.sent) throw error;
    return sendPage(reply.header('cache-control', 'no-store'), renderRefusalPage(status, (error as HttpError).message), status);
  }
};

const routeSchema = (summary: string, description: string) => ({
  summary,
  description,
  tags: ['share links'],
  params: { type: 'object', properties: { token: { type: 'string' }, '*': { type: 'string' } } },
});

export async function linkRoutes(app: FastifyInstance, options: LinkRoutesOptions): Promise<void> {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  // A request's file as the raw body: handed over as the stream, never buffered.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  const readSchema = routeSchema(
    'Read through a share link',
    "A shared file (Range, ETag) or a shared folder's listing (HTML, or JSON with `Accept: application/json` / `?format=json`) and the files in it. " +
      "With a password: HTTP Basic with any user name, or the form's cookie. A file request answers its upload page (browsers) and 403 otherwise.",
  );
  const postSchema = routeSchema(
    'Upload through a file request',
    'multipart/form-data (part `file`) into the folder or at `/<name>`, or application/octet-stream at `/<name>`; a urlencoded `password` is the password form.',
  );
  for (const url of [`${LINK_PREFIX}:token`, `${LINK_PREFIX}:token/*`]) {
    app.get(url, { schema: readSchema }, (request, reply) => withPages(read)(options, request, reply));
    app.post(url, { schema: postSchema }, (request, reply) => withPages(post)(options, request, reply));
  }
  const zipSchema = routeSchema('A shared folder as .zip', 'Streamed (stored, ZIP64 where needed); one use of the link.');
  for (const url of [`${ZIP_PREFIX}:token`, `${ZIP_PREFIX}:token/*`])
    app.get(url, { schema: zipSchema }, (request, reply) => withPages(zip)(options, request, reply));
}
