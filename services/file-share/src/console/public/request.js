/* global document */
// A file request's page (an upload-only link): the chosen file goes through the link's resumable endpoint
// (`/-/tus/<token>`, in <body data-tus-endpoint>) with the console's tus client (resumable.js), so an outsider's
// upload survives a network cut or a page reload as the console's own do. Without this script the form posts the
// file in one request.
import { requestTarget, resumableUpload } from './resumable.js';

const form = document.getElementById('request-upload');
const endpoint = document.body.dataset.tusEndpoint;
const status = document.getElementById('status');

if (form && endpoint) {
  const input = form.querySelector('input[type="file"]');
  const send = form.querySelector('button[type="submit"]');
  const progress = document.createElement('progress');
  progress.id = 'request-progress';
  progress.setAttribute('aria-label', 'Sent so far');
  progress.hidden = true;
  const toggle = document.createElement('button');
  toggle.type = 'button';
  toggle.hidden = true;
  form.append(progress, toggle);

  let upload;
  let file;
  const say = (state, text) => {
    form.dataset.state = state;
    if (text !== undefined) status.textContent = text;
  };
  const view = {
    progress(sent) {
      progress.max = Math.max(file.size, 1);
      progress.value = sent;
      status.textContent = `Sending ${file.name}: ${Math.floor((sent / Math.max(file.size, 1)) * 100)}%`;
    },
    state: say,
  };

  const run = async () => {
    toggle.textContent = 'Pause';
    toggle.hidden = false;
    send.disabled = true;
    input.disabled = true;
    try {
      const { sha256 } = await upload.start();
      progress.value = progress.max;
      say('done', `Received: ${file.name}. Thank you. SHA-256 ${sha256}`);
      toggle.hidden = true;
      form.reset();
      send.disabled = false;
      input.disabled = false;
    } catch (error) {
      if (error.paused) {
        say('paused', `Paused at ${Math.floor((progress.value / Math.max(progress.max, 1)) * 100)}%: Resume continues where it stopped`);
        toggle.textContent = 'Resume';
        return;
      }
      say('failed', error.message);
      toggle.hidden = true;
      send.disabled = false;
      input.disabled = false;
    }
  };

  toggle.addEventListener('click', () => {
    if (form.dataset.state === 'paused') void run();
    else upload?.pause();
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    file = input.files?.[0];
    if (!file) return;
    progress.hidden = false;
    progress.value = 0;
    upload = resumableUpload(file, requestTarget(endpoint, file), view);
    void run();
  });
}
