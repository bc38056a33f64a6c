/* global document, location, URL, FormData */
// The listing's share dialog: a share link for a file or folder, or a file request for a folder (POST /api/shares),
// with expiry, optional password and use limit; the new link is shown with a copy button. The server decides what
// the signed-in user may delegate and answers with its reason when it refuses.
import { announce, api, copyText } from './console.js';

const $ = (id) => document.getElementById(id);
const dialog = $('share-dialog');
const form = $('share-form');
let target = null;

/** Opens the dialog for the entry `path` (a share path). */
export function openShareDialog(path, isDirectory) {
  target = path;
  form.reset();
  $('share-target').textContent = path;
  $('share-kind-field').hidden = !isDirectory || document.body.dataset.canUpload !== 'true';
  $('share-result').hidden = true;
  $('share-error').textContent = '';
  $('share-create').disabled = false;
  dialog.showModal();
}

form?.addEventListener('submit', async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const body = { path: target, kind: String(data.get('kind') || 'share'), expires_in_seconds: Math.round(Number(data.get('days')) * 86400) };
  const password = String(data.get('password') ?? '');
  if (password) body.password = password;
  const uses = String(data.get('max_uses') ?? '');
  if (uses) body.max_uses = Number(uses);
  $('share-create').disabled = true;
  try {
    const created = await api('POST', '/api/shares', body);
    $('share-url').value = new URL(created.share.url, location.href).href;
    $('share-result').hidden = false;
    $('share-url').focus();
    $('share-url').select();
    announce(`${body.kind === 'request' ? 'File request' : 'Share link'} created for ${target}`);
  } catch (error) {
    $('share-error').textContent = error.message;
    $('share-create').disabled = false;
  }
});
$('share-copy')?.addEventListener('click', () => copyText($('share-url').value, 'Link'));
$('share-close')?.addEventListener('click', () => dialog.close());
