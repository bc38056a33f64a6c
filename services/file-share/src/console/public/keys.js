/* global document, FormData */
// The API keys page: create a key (POST /api/api-keys; the token is shown once with a copy button), revoke one
// (DELETE /api/api-keys/{id}, after a confirmation). The list is re-rendered by the server after each change.
import { announce, api, ask, button, copyText, refreshParts } from './console.js';

const form = document.getElementById('create-key');
const shown = document.getElementById('new-key');
const tokenField = document.getElementById('new-key-token');

function decorateRows() {
  for (const row of document.querySelectorAll('#keys tr[data-id]')) {
    const cell = row.querySelector('td.actions');
    if (!cell || cell.childElementCount > 0) continue;
    const { id, name } = row.dataset;
    cell.append(button('Revoke', `Revoke ${name}`, () => revoke(id, name), true));
  }
}

async function revoke(id, name) {
  const confirmed = await ask({
    title: 'Revoke API key?',
    message: `Tools using "${name}" will be refused from now on. This cannot be undone.`,
    confirm: 'Revoke',
    danger: true,
  });
  if (!confirmed) return;
  try {
    await api('DELETE', `/api/api-keys/${encodeURIComponent(id)}`);
    announce(`Revoked ${name}`);
    if (await refreshParts(['keys'])) decorateRows();
  } catch (error) {
    announce(error.message, true);
  }
}

form.hidden = false;
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const permissions = data.getAll('permissions');
  if (permissions.length === 0) {
    announce('Choose at least one permission', true);
    return;
  }
  const expires = data.get('expires');
  const body = { name: String(data.get('name')), permissions, scope: String(data.get('scope') || '/') };
  // A date picked is the end of that day (UTC), so "expires 2030-01-31" still works on the 31st.
  if (expires) body.expires_at = new Date(`${expires}T23:59:59.999Z`).toISOString();
  try {
    const created = await api('POST', '/api/api-keys', body);
    tokenField.value = created.token;
    shown.hidden = false;
    tokenField.focus();
    tokenField.select();
    form.reset();
    announce(`Created ${created.key.name}: copy the key now, it is shown only this once`);
    if (await refreshParts(['keys'])) decorateRows();
  } catch (error) {
    announce(error.message, true);
  }
});
document.getElementById('copy-token').addEventListener('click', () => copyText(tokenField.value, 'API key'));
decorateRows();
