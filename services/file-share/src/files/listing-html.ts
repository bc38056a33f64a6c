// The server-rendered directory listing: plain relative `<a href>` links (directories end in `/`), every name
// escaped, so browsers, `wget --mirror` and rclone's `http` remote can all walk the tree, with or without
// JavaScript. Sizes, times and SHA-256 are in the page for people; tools read the links and then HEAD/GET the
// files. The console's script (console/public/files.js) adds uploads with progress, drag and drop, folders,
// rename, delete, copy link and live updates on top of this page; without it the plain upload form remains.
import { escapeHtml } from '@boxyard/kit/web/html.ts';
import { providerSignInLink, renderPage, type Viewer } from '../console/layout.ts';
import { encodePath, relativeHref } from '../paths/share-path.ts';
import type { Entry } from '../tree/tree-store.ts';

export { escapeHtml };

export function humanSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export interface ListingPage {
  path: string;
  entries: readonly Entry[];
  total: number;
  page: number;
  limit: number;
  /** The caller may upload and create folders here (renaming needs canDelete too). */
  canUpload: boolean;
  /** The caller may delete (and replace) here. */
  canDelete: boolean;
  /** The caller may make share links here (signed in, with downloads): the share dialog is in the page. */
  canShare?: boolean;
  viewer: Viewer;
}

/** The 401 page a browser gets where anonymous readers may not read: the password form, and the provider's link. */
export function renderSignInRequired(path: string, viewer: Viewer, signInForm: string): string {
  const provider = viewer.signIn ? `<p>${providerSignInLink(viewer.signIn.displayName, viewer.returnTo)}</p>\n` : '';
  return renderPage({
    title: 'Sign in required',
    viewer: { ...viewer, username: null },
    signInPage: true,
    main: `<h1>Sign in required</h1>\n<p>Signing in is required to read ${escapeHtml(path)}.</p>\n${provider}${signInForm}`,
  });
}

function breadcrumbs(path: string): string {
  const names = path === '/' ? [] : path.slice(1).split('/');
  const parts = [`<a href="/">/</a>`];
  names.forEach((name, index) => {
    const target = encodePath(`/${names.slice(0, index + 1).join('/')}`, true);
    parts.push(`<a href="${escapeHtml(target)}">${escapeHtml(name)}</a>/`);
  });
  return parts.join('');
}

/** One entry's row of the listing table (no newline). */
export function renderRow(entry: Entry): string {
  const isDirectory = entry.kind === 'dir';
  const href = escapeHtml(relativeHref(entry.name, isDirectory));
  const label = escapeHtml(isDirectory ? `${entry.name}/` : entry.name);
  const modified = new Date(entry.mtime)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  const kind = isDirectory ? 'dir' : 'file';
  return `<tr data-name="${escapeHtml(entry.name)}" data-kind="${kind}"><td class="name"><a href="${href}">${label}</a></td><td class="size">${isDirectory ? '-' : humanSize(entry.size)}</td><td class="mtime">${modified}</td><td class="sum">${entry.sha256 ?? ''}</td><td class="actions"></td></tr>`;
}

/** The `../` row that opens every listing but the root's (with its newline). */
export const parentRow = (path: string) =>
  path === '/'
    ? ''
    : '<tr class="parent"><td class="name"><a href="../">../</a></td><td class="size">-</td><td class="mtime"></td><td class="sum"></td><td class="actions"></td></tr>\n';

export function renderRows(listing: Pick<ListingPage, 'path' | 'entries'>): string {
  return `${parentRow(listing.path)}${listing.entries.map(renderRow).join('\n')}`;
}

/** The share dialog (console/public/share-dialog.js): a share link or a file request for an entry of this folder. */
const SHARE_DIALOG = `<dialog id="share-dialog" aria-labelledby="share-title"><form id="share-form" method="dialog">
<h2 id="share-title">Share</h2><p id="share-target"></p>
<fieldset id="share-kind-field"><legend>Kind</legend>
<label class="check"><input type="radio" name="kind" value="share" checked> Share link: others can download</label>
<label class="check"><input type="radio" name="kind" value="request"> File request: others can upload, not look inside</label></fieldset>
<p><label for="share-days">Expires in (days)</label> <input id="share-days" name="days" type="number" min="0.01" step="any" value="7" required></p>
<p><label for="share-password">Password (optional)</label> <input id="share-password" name="password" type="password" minlength="8" maxlength="1024" autocomplete="new-password"></p>
<p><label for="share-uses">Use limit (optional)</label> <input id="share-uses" name="max_uses" type="number" min="1" step="1"></p>
<p id="share-error" class="error" role="alert"></p>
<section id="share-result" hidden><p class="token-line"><input id="share-url" readonly aria-label="The new link"> <button id="share-copy" type="button">Copy</button></p></section>
<p class="buttons"><button id="share-close" type="button" formnovalidate>Close</button> <button id="share-create" type="submit">Create link</button></p>
</form></dialog>`;

/** Where the rows go in the frame: `<` and `>` are escaped in everything a caller named, so this cannot occur there. */
const ROWS_MARKER = '<!--rows-->';

/**
 * The listing page around its entries' rows: `head` ends where the first entry's row begins (after the `../` row),
 * `tail` starts after the last row. The rows go between them joined by newlines (listing-html-stream.ts streams
 * them).
 */
export function listingFrame(listing: Omit<ListingPage, 'entries'>): { head: string; tail: string } {
  const title = `Index of ${listing.path === '/' ? '/' : `${listing.path}/`}`;
  const pages = Math.max(1, Math.ceil(listing.total / listing.limit));
  const limitParam = `&amp;limit=${listing.limit}`;
  const nav =
    pages > 1
      ? `<nav id="pages">Page ${listing.page} of ${pages} (${listing.total} entries)${listing.page > 1 ? ` <a href="?page=${listing.page - 1}${limitParam}">previous</a>` : ''}${listing.page < pages ? ` <a href="?page=${listing.page + 1}${limitParam}">next</a>` : ''}</nav>`
      : `<nav id="pages">${listing.total} ${listing.total === 1 ? 'entry' : 'entries'}</nav>`;
  // Without JavaScript this form uploads one file; the script replaces it with the upload panel.
  const upload = listing.canUpload
    ? `<form id="plain-upload" class="box" method="post" enctype="multipart/form-data"><label>Upload a file here: <input type="file" name="file" required></label> <button type="submit">Upload</button></form>
<section id="upload-panel" class="box" aria-labelledby="upload-heading" hidden>
<h2 id="upload-heading">Add files</h2>
<div id="drop-zone" class="drop-zone">Drop files or folders here, or
<label class="button">Choose files<input id="pick-files" class="visually-hidden" type="file" multiple></label>
<label class="button">Choose a folder<input id="pick-folder" class="visually-hidden" type="file" webkitdirectory></label>
<button id="new-folder" type="button">New folder</button></div>
<ul id="uploads" class="uploads" aria-label="Uploads"></ul>
</section>`
    : '';
  const dialog = `<dialog id="dialog" aria-labelledby="dialog-title"><form method="dialog">
<h2 id="dialog-title"></h2><p id="dialog-message"></p>
<label id="dialog-field" hidden><span id="dialog-label"></span> <input id="dialog-input" name="value" autocomplete="off"></label>
<p class="buttons"><button id="dialog-cancel" value="cancel" type="submit" formnovalidate>Cancel</button> <button id="dialog-confirm" value="confirm" type="submit"></button></p>
</form></dialog>`;
  // The whole page is rendered around a marker the rows replace; no entry's text can contain it (all escaped).
  const page = renderPage({
    title,
    viewer: listing.viewer,
    scripts: ['files.js'],
    data: {
      path: listing.path,
      'can-upload': String(listing.canUpload),
      'can-delete': String(listing.canDelete),
      'can-share': String(listing.canShare ?? false),
    },
    main: `<h1>Index of ${breadcrumbs(listing.path)}</h1>
${nav}
${upload}
<div class="table-wrap">
<table class="listing">
<thead><tr><th scope="col">Name</th><th scope="col" class="size">Size</th><th scope="col" class="mtime">Modified (UTC)</th><th scope="col">SHA-256</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody id="entries">
${parentRow(listing.path)}${ROWS_MARKER}
</tbody>
</table>
</div>
${dialog}${listing.canShare ? `\n${SHARE_DIALOG}` : ''}`,
  });
  const at = page.indexOf(ROWS_MARKER);
  return { head: page.slice(0, at), tail: page.slice(at + ROWS_MARKER.length) };
}
