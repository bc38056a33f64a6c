/* global document, navigator, getSelection, setTimeout, confirm, fetch, location, URLSearchParams, XMLHttpRequest */
// Progressive enhancement for the box console: the pages work without this script for browsing; it adds the copy
// buttons, sends management forms to the JSON API (with the session cookie), and streams box uploads with a
// progress bar. Served from the service itself under a strict CSP (no inline code anywhere).

/** Shows copy buttons and copies the text of the element they name. */
function enableCopyButtons() {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const source = document.getElementById(button.dataset.copy);
      try {
        await navigator.clipboard.writeText(source.textContent);
        button.textContent = 'Copied';
      } catch {
        // No clipboard permission: select the text so the user can copy it by hand.
        const range = document.createRange();
        range.selectNodeContents(source);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        button.textContent = 'Press Ctrl+C';
      }
      setTimeout(() => (button.textContent = 'Copy'), 2000);
    });
  }
}

/** A problem-details body as one readable line (each detail once: the summary often repeats the only one). */
function describeProblem(body, status) {
  if (!body || typeof body !== 'object') return `The server answered ${status}.`;
  const details = Array.isArray(body.errors) ? body.errors.map((e) => e.detail).filter(Boolean) : [];
  return [...new Set([body.detail || body.title || body.message || `Error ${status}`, ...details])].join(' — ');
}

async function problemText(response) {
  return describeProblem(await response.json().catch(() => null), response.status);
}

/** `{name}` placeholders filled from an object (form fields or the answer). */
const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => encodeURIComponent(values[key] ?? ''));

/** The form as the API's JSON: checkboxes are booleans, numbers are numbers, empty optional fields are left out. */
function formJson(form) {
  const body = {};
  const pathValues = {};
  for (const element of form.elements) {
    if (!element.name || element.type === 'submit') continue;
    // Checkboxes marked data-array make one array of the checked values (webhook events); others are booleans.
    if (element.type === 'checkbox' && element.hasAttribute('data-array'))
      body[element.name] = [...(body[element.name] ?? []), ...(element.checked ? [element.value] : [])];
    else if (element.type === 'checkbox') body[element.name] = element.checked;
    else if (element.hasAttribute('data-path-only')) pathValues[element.name] = element.value;
    else if (element.value === '') continue;
    else if (element.dataset.type === 'boolean') body[element.name] = element.value === 'true';
    else body[element.name] = element.type === 'number' ? Number(element.value) : element.value;
    pathValues[element.name] ??= element.value;
  }
  return { body, pathValues };
}

function enableApiForms() {
  for (const form of document.querySelectorAll('form.api')) {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const error = form.querySelector('.error');
      error.textContent = '';
      if (form.dataset.confirm && !confirm(form.dataset.confirm)) return;
      const { body, pathValues } = formJson(form);
      const method = form.dataset.method;
      const button = form.querySelector('button[type=submit]');
      button.disabled = true;
      try {
        const response = await fetch(fill(form.dataset.action, pathValues), {
          method,
          credentials: 'same-origin',
          headers: method === 'DELETE' ? { accept: 'application/json' } : { 'content-type': 'application/json', accept: 'application/json' },
          body: method === 'DELETE' ? undefined : JSON.stringify(body),
        });
        if (!response.ok) {
          error.textContent = await problemText(response);
          return;
        }
        const answer = await response.json().catch(() => ({}));
        if (form.dataset.show) {
          // A secret shown once (a service-account key): displayed here, never stored in the page's URL or state.
          const panel = form.parentElement.querySelector('.shown-once');
          panel.querySelector('pre').textContent = answer[form.dataset.show];
          for (const field of panel.querySelectorAll('[data-field]')) field.textContent = answer[field.dataset.field] ?? '';
          panel.hidden = false;
          form.reset();
          return;
        }
        if (form.dataset.next) location.assign(fill(form.dataset.next, { ...pathValues, ...answer }));
        else location.reload();
      } catch (failure) {
        error.textContent = `The request failed: ${failure.message}`;
      } finally {
        button.disabled = false;
      }
    });
  }
}

/**
 * Uploads send the File itself as the request body (the raw upload route): the browser streams it from disk, so
 * a multi-gigabyte box never sits in the page's memory, and XHR reports the upload progress.
 */
function enableUploads() {
  for (const form of document.querySelectorAll('form.upload')) {
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const file = form.elements.file.files[0];
      if (!file) return;
      const progress = form.querySelector('progress');
      const status = form.querySelector('.status');
      const error = form.querySelector('.error');
      const button = form.querySelector('button[type=submit]');
      error.textContent = '';
      progress.hidden = false;
      progress.value = 0;
      button.disabled = true;
      // The name goes in the query: a header could not carry every file name a user may pick.
      const query = new URLSearchParams({ file_name: file.name });
      if (form.elements.replace?.checked) query.set('replace', 'true');
      const xhr = new XMLHttpRequest();
      xhr.open('POST', `${form.dataset.action}?${query}`);
      xhr.setRequestHeader('content-type', 'application/octet-stream');
      xhr.setRequestHeader('accept', 'application/json');
      xhr.upload.addEventListener('progress', (e) => {
        if (!e.lengthComputable) return;
        progress.value = Math.floor((e.loaded / e.total) * 100);
        status.textContent = `Uploading ${file.name}: ${progress.value}%`;
      });
      xhr.addEventListener('load', () => {
        button.disabled = false;
        let answer = null;
        try {
          answer = JSON.parse(xhr.responseText);
        } catch {
          // not JSON
        }
        if (xhr.status >= 200 && xhr.status < 300 && answer) {
          progress.value = 100;
          status.textContent = '';
          const done = document.createElement('span');
          done.textContent = `Uploaded ${answer.file_name} (${answer.size} bytes). Server's SHA-256: `;
          const code = document.createElement('code');
          code.className = 'sha256';
          code.textContent = answer.sha256;
          status.append(done, code);
        } else {
          progress.hidden = true;
          status.textContent = '';
          error.textContent = `Upload failed: ${describeProblem(answer, xhr.status)}`;
        }
      });
      xhr.addEventListener('error', () => {
        button.disabled = false;
        progress.hidden = true;
        status.textContent = '';
        error.textContent = 'The upload was interrupted.';
      });
      xhr.send(file);
    });
  }
}

enableCopyButtons();
enableApiForms();
enableUploads();
