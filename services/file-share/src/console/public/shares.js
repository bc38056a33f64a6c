/* global document */
// The share links page: copy a link, revoke one (DELETE /api/shares/{id}, after a confirmation); the list is
// re-rendered by the server after each change.
import { announce, api, ask, button, copyText, refreshParts } from './console.js';

function decorateRows() {
  for (const row of document.querySelectorAll('#shares tr[data-id]')) {
    const cell = row.querySelector('td.actions');
    if (!cell || cell.childElementCount > 0) continue;
    const { id, path, state } = row.dataset;
    const url = row.querySelector('input.link')?.value ?? '';
    cell.append(button('Copy', `Copy the link to ${path}`, () => copyText(url, 'Link')));
    if (state !== 'revoked') cell.append(button('Revoke', `Revoke the link to ${path}`, () => revoke(id, path), true));
  }
}

async function revoke(id, path) {
  const confirmed = await ask({
    title: 'Revoke link?',
    message: `The link to ${path} stops working at once. This cannot be undone.`,
    confirm: 'Revoke',
    danger: true,
  });
  if (!confirmed) return;
  try {
    await api('DELETE', `/api/shares/${encodeURIComponent(id)}`);
    announce(`Revoked the link to ${path}`);
    if (await refreshParts(['shares'])) decorateRows();
  } catch (error) {
    announce(error.message, true);
  }
}

decorateRows();
