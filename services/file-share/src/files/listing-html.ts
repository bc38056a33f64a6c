// The server-rendered directory listing: plain relative `<a href>` links (directories end in `/`), every name
// escaped, no JavaScript, so browsers, `wget --mirror` and rclone's `http` remote can all walk the tree. Sizes
// and times are in the page for people; tools read the links and then HEAD/GET the files.
import { encodePath, relativeHref } from '../paths/share-path.ts';
import type { Entry } from '../tree/tree-store.ts';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function humanSize(bytes: number): string {
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
  /** Show the upload form (the caller may upload here). */
  canUpload: boolean;
  username: string | null;
}

const style = `body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{padding:.25rem .75rem;text-align:left;border-bottom:1px solid #eee}
td.size{text-align:right;white-space:nowrap}td.sum{font-family:monospace;font-size:.8rem;color:#666}
nav{margin:1rem 0}form{margin:1rem 0;padding:.5rem;border:1px solid #ddd}`;

function breadcrumbs(path: string): string {
  const names = path === '/' ? [] : path.slice(1).split('/');
  const parts = [`<a href="/">/</a>`];
  names.forEach((name, index) => {
    const target = encodePath(`/${names.slice(0, index + 1).join('/')}`, true);
    parts.push(`<a href="${escapeHtml(target)}">${escapeHtml(name)}</a>/`);
  });
  return parts.join('');
}

export function renderListing(listing: ListingPage): string {
  const title = `Index of ${listing.path === '/' ? '/' : `${listing.path}/`}`;
  const rows = listing.entries
    .map((entry) => {
      const isDirectory = entry.kind === 'dir';
      const href = escapeHtml(relativeHref(entry.name, isDirectory));
      const label = escapeHtml(isDirectory ? `${entry.name}/` : entry.name);
      const modified = new Date(entry.mtime).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
      return `<tr><td><a href="${href}">${label}</a></td><td class="size">${isDirectory ? '-' : humanSize(entry.size)}</td><td>${modified}</td><td class="sum">${entry.sha256 ?? ''}</td></tr>`;
    })
    .join('\n');
  const parent = listing.path === '/' ? '' : '<tr><td><a href="../">../</a></td><td class="size">-</td><td></td><td></td></tr>\n';
  const pages = Math.max(1, Math.ceil(listing.total / listing.limit));
  const limitParam = `&amp;limit=${listing.limit}`;
  const nav =
    pages > 1
      ? `<nav>Page ${listing.page} of ${pages} (${listing.total} entries)${listing.page > 1 ? ` <a href="?page=${listing.page - 1}${limitParam}">previous</a>` : ''}${listing.page < pages ? ` <a href="?page=${listing.page + 1}${limitParam}">next</a>` : ''}</nav>`
      : `<nav>${listing.total} ${listing.total === 1 ? 'entry' : 'entries'}</nav>`;
  const upload = listing.canUpload
    ? `<form method="post" enctype="multipart/form-data"><label>Upload a file here: <input type="file" name="file" required></label> <button type="submit">Upload</button></form>`
    : '';
  const who = listing.username ? `<p>Signed in as ${escapeHtml(listing.username)}</p>` : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${style}</style>
</head>
<body>
<h1>Index of ${breadcrumbs(listing.path)}</h1>
${who}${nav}
<table>
<thead><tr><th>Name</th><th>Size</th><th>Modified (UTC)</th><th>SHA-256</th></tr></thead>
<tbody>
${parent}${rows}
</tbody>
</table>
${upload}
</body>
</html>
`;
}
