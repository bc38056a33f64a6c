// GET /-/keys: the signed-in user's API keys (admins see their own here too; `GET /api/api-keys?all=true` lists
// everyone's). The list is server-rendered; console/public/keys.js creates keys through POST /api/api-keys
// (the token is shown once, with a copy button) and revokes them through DELETE /api/api-keys/{id}.
import type { ApiKeyRecord } from '../auth/api-key-store.ts';
import type { Permission } from '../auth/principal.ts';
import { escapeHtml } from '@boxyard/kit/web/html.ts';
import { renderPage, type Viewer } from './layout.ts';

const day = (value: number | null) =>
  value === null
    ? ''
    : new Date(value)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');

export function renderKeyRows(keys: readonly ApiKeyRecord[]): string {
  if (keys.length === 0) return '<tr class="empty"><td colspan="7">No API keys yet.</td></tr>';
  return keys
    .map(
      (key) =>
        `<tr data-id="${escapeHtml(key.id)}" data-name="${escapeHtml(key.name)}"><td class="name">${escapeHtml(key.name)}</td><td data-label="Permissions">${escapeHtml(key.permissions.join(', '))}</td><td data-label="Folder">${escapeHtml(key.scope)}</td><td class="mtime">${day(key.created_at)}</td><td data-label="Expires">${key.expires_at === null ? 'never' : day(key.expires_at)}</td><td class="mtime">${key.last_used_at === null ? 'never' : day(key.last_used_at)}</td><td class="actions"></td></tr>`,
    )
    .join('\n');
}

export function renderKeysPage(viewer: Viewer, keys: readonly ApiKeyRecord[], allowed: readonly Permission[]): string {
  const boxes = allowed
    .map(
      (permission, index) =>
        `<label class="check"><input type="checkbox" name="permissions" value="${permission}"${index === 0 ? ' checked' : ''}> ${permission}</label>`,
    )
    .join(' ');
  return renderPage({
    title: 'API keys',
    viewer,
    scripts: ['keys.js'],
    main: `<h1>API keys</h1>
<p>Keys are for tools: send <code>Authorization: Bearer &lt;key&gt;</code>. A key holds at most the permissions you may give it (${escapeHtml(allowed.join(', '))}).</p>
<form id="create-key" class="box" hidden>
<h2>New key</h2>
<p><label for="key-name">Name</label><input id="key-name" name="name" required maxlength="200" autocomplete="off"></p>
<fieldset><legend>Permissions</legend>${boxes}</fieldset>
<p><label for="key-scope">Folder (scope)</label><input id="key-scope" name="scope" value="/" maxlength="4096" autocomplete="off"></p>
<p><label for="key-expires">Expires (optional)</label><input id="key-expires" name="expires" type="date"></p>
<p><button type="submit">Create key</button></p>
</form>
<p class="no-script">Creating and revoking keys here needs JavaScript; <code>/api/api-keys</code> does the same from a terminal.</p>
<section id="new-key" class="box notice" hidden aria-labelledby="new-key-heading">
<h2 id="new-key-heading">Your new key</h2>
<p>Copy it now: it is shown only this once.</p>
<p class="token-line"><input id="new-key-token" readonly aria-label="The new API key"> <button id="copy-token" type="button">Copy</button></p>
</section>
<div class="table-wrap">
<table class="listing keys">
<thead><tr><th scope="col">Name</th><th scope="col">Permissions</th><th scope="col">Folder</th><th scope="col" class="mtime">Created (UTC)</th><th scope="col">Expires (UTC)</th><th scope="col" class="mtime">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody id="keys">
${renderKeyRows(keys)}
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
