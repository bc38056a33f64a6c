/* global document, navigator, fetch, location, DOMParser */
// Helpers the console's pages share: the confirmation/input dialog, the status line, copying to the clipboard,
// JSON calls to the share's API (same origin: the session cookie rides along, the Origin header passes the
// share's cross-site check), and swapping parts of the page for a fresh server-rendered copy.
document.documentElement.classList.add('js');

const $ = (id) => document.getElementById(id);

/** Says something in the status line (a polite live region, read out by screen readers). */
export function announce(text, failed = false) {
  const status = $('status');
  if (!status) return;
  status.textContent = text;
  status.classList.toggle('error', failed);
}

/**
 * Opens the page's <dialog>: a confirmation, or a question with a text field. Resolves to the field's value
 * (or true for a confirmation), or null when cancelled (Escape, Cancel).
 */
export function ask({ title, message = '', label, value = '', confirm = 'OK', danger = false }) {
  const dialog = $('dialog');
  const input = $('dialog-input');
  $('dialog-title').textContent = title;
  $('dialog-message').textContent = message;
  $('dialog-field').hidden = label === undefined;
  $('dialog-label').textContent = label ?? '';
  input.value = value;
  input.required = label !== undefined;
  const button = $('dialog-confirm');
  button.textContent = confirm;
  button.classList.toggle('danger', danger);
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'confirm' ? (label === undefined ? true : input.value) : null), { once: true });
    dialog.showModal();
    if (label !== undefined) {
      input.focus();
      // Select the name without its extension, as file managers do.
      const dot = value.lastIndexOf('.');
      input.setSelectionRange(0, dot > 0 ? dot : value.length);
    } else {
      $('dialog-cancel').focus();
    }
  });
}

/** Copies text; where the clipboard API is unavailable (plain http off loopback) the dialog shows it to copy. */
export async function copyText(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    announce(`${what} copied to the clipboard`);
  } catch {
    await ask({
      title: `Copy the ${what.toLowerCase()}`,
      message: 'The clipboard is not available here: copy it from the field.',
      label: what,
      value: text,
      confirm: 'Done',
    });
  }
}

/** A JSON call to the share's API; resolves to the envelope's data, or throws with the service's message. */
export async function api(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  let json = null;
  try {
    json = await response.json();
  } catch {
    // not JSON: the status says it
  }
  if (!response.ok) throw new Error(messageOf(json, response.status));
  return json?.data;
}

/** The service's error message (with the first detail when there is one). */
export function messageOf(json, status) {
  if (!json || typeof json.message !== 'string') return `The request failed (HTTP ${status})`;
  const detail = Array.isArray(json.details) ? json.details[0]?.detail : typeof json.details === 'string' ? json.details : undefined;
  return detail && detail !== json.message ? `${json.message}: ${detail}` : json.message;
}

/** Replaces the elements with these ids by their copies in a fresh rendering of this page. */
export async function refreshParts(ids) {
  const response = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) return false;
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html');
  for (const id of ids) {
    const current = $(id);
    const next = fresh.getElementById(id);
    if (current && next) current.replaceWith(document.adoptNode(next));
  }
  return true;
}

/** A button element with a visible label and, where the label alone is ambiguous, an accessible name. */
export function button(label, accessibleName, onClick, danger = false) {
  const element = document.createElement('button');
  element.type = 'button';
  element.textContent = label;
  if (accessibleName) element.setAttribute('aria-label', accessibleName);
  if (danger) element.classList.add('danger');
  element.addEventListener('click', onClick);
  return element;
}
