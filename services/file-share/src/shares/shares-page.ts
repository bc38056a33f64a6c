// GET /-/shares: the signed-in user's share links and file requests — state, uses, last use, the link to copy, a
// revoke button (console/public/shares.js) — and, for each file request, the files that arrived through it. Links
// are made from the listing's share dialog (console/public/share-dialog.js).
import { escapeHtml } from '@boxyard/kit/web/html.ts';
import { renderPage, SHARES_PATH, type Viewer } from '../console/layout.ts';
import type { Arrival } from './share-store.ts';
import type { shareView } from './share-routes.ts';

export { SHARES_PATH };

type View = ReturnType<typeof shareView>;
const time = (value: string | null) => (value === null ? 'never' : value.replace('T', ' ').replace(/\.\d+Z$/, 'Z'));

function arrivalsList(arrivals: readonly Arrival[]): string {
  if (arrivals.length === 0) return 'nothing yet';
  const items = arrivals.map(
    (a) => `<li><span class="file">${escapeHtml(a.path)}</span> ${a.size} B · ${escapeHtml(time(new Date(a.arrived_at).toISOString()))}</li>`,
  );
  return `<details><summary>${arrivals.length} ${arrivals.length === 1 ? 'file' : 'files'}</summary><ul class="arrivals">${items.join('')}</ul></details>`;
}

export function renderShareRows(links: readonly View[], arrivals: ReadonlyMap<string, readonly Arrival[]>): string {
  if (links.length === 0) return '<tr class="empty"><td colspan="8">No links yet: use "Share" on a file or folder.</td></tr>';
  return links
    .map((link) => {
      const uses = link.max_uses === null ? String(link.uses) : `${link.uses} of ${link.max_uses}`;
      const received = link.kind === 'request' ? arrivalsList(arrivals.get(link.id) ?? []) : '';
      return `<tr data-id="${escapeHtml(link.id)}" data-state="${link.state}" data-path="${escapeHtml(link.path)}"><td class="name">${escapeHtml(link.path)}</td><td data-label="Kind">${link.kind === 'request' ? 'file request' : 'share link'}${link.has_password ? ', password' : ''}</td><td data-label="State">${link.state}</td><td data-label="Uses">${uses}</td><td data-label="Expires">${time(link.expires_at)}</td><td class="mtime">${time(link.last_used_at)}</td><td data-label="Link"><input class="link" readonly value="${escapeHtml(link.url)}" aria-label="Link to ${escapeHtml(link.path)}"> ${received}</td><td class="actions"></td></tr>`;
    })
    .join('\n');
}

export function renderSharesPage(viewer: Viewer, links: readonly View[], arrivals: ReadonlyMap<string, readonly Arrival[]>): string {
  return renderPage({
    title: 'Share links',
    viewer,
    scripts: ['shares.js'],
    main: `<h1>Share links and file requests</h1>
<p>Links you made. A share link lets anyone who has it (and its password) download; a file request lets them upload into its folder without seeing inside. A link never holds more than you do.</p>
<div class="table-wrap">
<table class="listing shares">
<thead><tr><th scope="col">Path</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Uses</th><th scope="col">Expires (UTC)</th><th scope="col" class="mtime">Last used</th><th scope="col">Link</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody id="shares">
${renderShareRows(links, arrivals)}
</tbody>
</table>
</div>
<dialog id="dialog" aria-labelledby="dialog-title"><form method="dialog">
<h2 id="dialog-title"></h2><p id="dialog-message"></p>
<label id="dialog-field" hidden><span id="dialog-label"></span> <input id="dialog-input" name="value" autocomplete="off"></label>
<p class="buttons"><button id="dialog-cancel" value="cancel" type="submit" formnovalidate>Cancel</button> <button id="dialog-confirm" value="confirm" type="submit"></button></p>
</form></dialog>`,
  });
}
