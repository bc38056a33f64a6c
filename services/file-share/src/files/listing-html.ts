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
  /** Provider sign-in (auth.sign_in), when enabled: a sign-in link for anonymous readers, sign-out for sessions. */
  signIn?: { displayName: string; returnTo: string; signedInBySession: boolean } | undefined;
}

const LOGIN_PATH = '/auth/oidc/login';
const LOGOUT_PATH = '/auth/oidc/logout';

const signInLink = (displayName: string, returnTo: string) =>
  `<a href="${escapeHtml(`${LOGIN_PATH}?return_to=${encodeURIComponent(returnTo)}`)}">Sign in with ${escapeHtml(displayName)}</a>`;

/** Who is reading, and the way to sign in or out (plain links and forms: the page has no script). */
function account(listing: ListingPage): string {
  const signIn = listing.signIn;
  if (!listing.username) return signIn ? `<p>${signInLink(signIn.displayName, signIn.returnTo)}</p>` : '';
  const signOut = signIn?.signedInBySession ? ` <form class="inline" method="post" action="${LOGOUT_PATH}"><button type="submit">Sign out</button></form>` : '';
  return `<p>Signed in as ${escapeHtml(listing.username)}${signOut}</p>`;
}

/** The 401 page a browser gets where anonymous readers may not read, when provider sign-in is enabled. */
export function renderSignInRequired(path: string, displayName: string, returnTo: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in required</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222}</style>
</head>
<body>
<h1>Sign in required</h1>
<p>Signing in is required to read ${escapeHtml(path)}.</p>
<p>${signInLink(displayName, returnTo)}</p>
</body>
</html>
`;
}

const style = `body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{padding:.25rem .75rem;text-align:left;border-bottom:1px solid #eee}
td.size{text-align:right;white-space:nowrap}td.sum{font-family:monospace;font-size:.8rem;color:#666}
nav{margin:1rem 0}form{margin:1rem 0;padding:.5rem;border:1px solid #ddd}form.inline{display:inline;margin:0 0 0 .5rem;padding:0;border:0}`;

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
  const who = account(listing);
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
