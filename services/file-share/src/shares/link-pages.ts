// The pages an outsider sees through a link: a shared folder's listing (the share's own rows: relative links, so
// `wget --mirror --no-parent` walks exactly the shared folder), the password form, and a file request's upload
// form. No account bar, nothing above the shared entry: the page names paths relative to the link. Only the upload
// form has a script (request.js: the file goes through the link's resumable endpoint; without it, one POST).
import { escapeHtml } from '@boxyard/kit/web/html.ts';
import { renderPage } from '../console/layout.ts';
import { humanSize, renderRows } from '../files/listing-html.ts';
import type { Entry } from '../tree/tree-store.ts';

const viewer = { username: null, via: 'share-link' as const, returnTo: '/' };

const page = (title: string, main: string, script?: { name: string; data: Record<string, string> }) =>
  renderPage({ title, viewer, signInPage: true, main, ...(script ? { scripts: [script.name], data: script.data } : {}) });

export interface LinkListing {
  /** The shared folder's own name (`share` for the root). */
  rootName: string;
  /** The listed folder relative to the link (`/` = the shared folder). */
  relativePath: string;
  entries: readonly Entry[];
  total: number;
  page: number;
  limit: number;
  /** Where the folder's zip is (outside the link's page path, so a mirror never fetches it). */
  zipHref: string;
  expiresAt: number;
}

export function renderLinkListing(listing: LinkListing): string {
  const title = `${listing.rootName}${listing.relativePath === '/' ? '/' : `${listing.relativePath}/`}`;
  const pages = Math.max(1, Math.ceil(listing.total / listing.limit));
  const nav =
    pages > 1
      ? `<nav id="pages">Page ${listing.page} of ${pages} (${listing.total} entries)${listing.page > 1 ? ` <a href="?page=${listing.page - 1}&amp;limit=${listing.limit}">previous</a>` : ''}${listing.page < pages ? ` <a href="?page=${listing.page + 1}&amp;limit=${listing.limit}">next</a>` : ''}</nav>`
      : `<nav id="pages">${listing.total} ${listing.total === 1 ? 'entry' : 'entries'}</nav>`;
  return page(
    `Shared: ${title}`,
    `<h1>Shared folder ${escapeHtml(title)}</h1>
<p class="share-note">Shared with you until ${escapeHtml(
      new Date(listing.expiresAt)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z'),
    )}. <a id="zip" href="${escapeHtml(listing.zipHref)}" download>Download this folder as .zip</a></p>
${nav}
<div class="table-wrap">
<table class="listing">
<thead><tr><th scope="col">Name</th><th scope="col" class="size">Size</th><th scope="col" class="mtime">Modified (UTC)</th><th scope="col">SHA-256</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody id="entries">
${renderRows({ path: listing.relativePath, entries: listing.entries })}
</tbody>
</table>
</div>`,
  );
}

/** The browser's password form: posts back to the same URL, which then sets the link's cookie. */
export function renderPasswordPage(error?: string): string {
  const message = error ? `<p class="error" role="alert">${escapeHtml(error)}</p>\n` : '';
  return page(
    'Password required',
    `<h1>Password required</h1>
<p>This link is protected by a password.</p>
${message}<form class="box" method="post"><label>Password <input type="password" name="password" autocomplete="current-password" required autofocus></label> <button type="submit">Open</button></form>`,
  );
}

export interface RequestPageOptions {
  folderName: string;
  /** The link's resumable (tus) endpoint, `/-/tus/<token>`. */
  tusEndpoint: string;
  expiresAt: number;
  maxFileBytes: number;
  remaining: number | null;
  received?: string | undefined;
}

/** A file request's page: an upload form and nothing of what the folder holds. */
export function renderRequestPage(options: RequestPageOptions): string {
  const received = options.received ? `<p class="ok" role="status">Received: ${escapeHtml(options.received)}. Thank you.</p>\n` : '';
  const remaining = options.remaining === null ? '' : ` Files that can still be sent: ${options.remaining}.`;
  return page(
    `Send files to ${options.folderName}`,
    `<h1>Send files to ${escapeHtml(options.folderName)}</h1>
${received}<p>Files you send here go into the folder <strong>${escapeHtml(options.folderName)}</strong>; you cannot see what it holds, and a file whose name is already taken is refused. Largest file: ${humanSize(options.maxFileBytes)}.${remaining} Open until ${escapeHtml(
      new Date(options.expiresAt)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z'),
    )}.</p>
<form id="request-upload" class="box" method="post" enctype="multipart/form-data"><label>File <input type="file" name="file" required></label> <button type="submit">Send</button></form>`,
    { name: 'request.js', data: { 'tus-endpoint': options.tusEndpoint } },
  );
}

/** What a browser sees when a link refuses it (gone, not found, not allowed): the reason, and nothing else. */
export function renderRefusalPage(status: number, message: string): string {
  const title = status === 410 ? 'Link no longer available' : status === 404 ? 'Not found' : 'Not available';
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p class="error" role="alert">${escapeHtml(message)}.</p>`);
}
