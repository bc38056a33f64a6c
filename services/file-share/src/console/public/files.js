/* global document, location, window, URL, XMLHttpRequest, EventSource, setTimeout, clearTimeout */
// The listing's enhancements: uploads of several files and whole folders (file pickers, drag and drop) with a
// progress bar each, new folder, rename, delete with confirmation, copy link, and live updates from /events.
// Each upload sends the File itself as the request body (application/octet-stream; the browser streams it from
// disk, nothing is read into the page) to the file's own URL path, so folders are recreated on the way. Files of
// RESUMABLE_BYTES and more go through the resumable (tus) endpoint instead, with pause/resume, and survive a
// network cut or a page reload (resumable.js).
import { announce, api, ask, button, copyText, messageOf, refreshParts } from './console.js';
import { openShareDialog } from './share-dialog.js';
import { rememberedUploads, resumableUpload, shareTarget } from './resumable.js';

const RESUMABLE_BYTES = 8 * 1024 * 1024;

const body = document.body;
const folder = body.dataset.path ?? '/';
const canUpload = body.dataset.canUpload === 'true';
const canDelete = body.dataset.canDelete === 'true';
const canShare = body.dataset.canShare === 'true';
const folderUrl = location.pathname.endsWith('/') ? location.pathname : `${location.pathname}/`;

const encodeName = (name) => encodeURIComponent(name);
const entryUrl = (name, isDirectory) => `${folderUrl}${encodeName(name)}${isDirectory ? '/' : ''}`;
const encodeRelative = (relativePath) => relativePath.split('/').map(encodeName).join('/');

// ---- row actions -------------------------------------------------------------------------------------------

function decorateRows() {
  for (const row of document.querySelectorAll('#entries tr[data-name]')) {
    const cell = row.querySelector('td.actions');
    if (!cell || cell.childElementCount > 0) continue;
    const name = row.dataset.name;
    const isDirectory = row.dataset.kind === 'dir';
    if (!isDirectory) cell.append(button('Copy link', `Copy link to ${name}`, () => copyText(new URL(entryUrl(name, false), location.href).href, 'Link')));
    if (canShare) cell.append(button('Share', `Share ${name}`, () => openShareDialog(folder === '/' ? `/${name}` : `${folder}/${name}`, isDirectory)));
    if (canUpload && canDelete) cell.append(button('Rename', `Rename ${name}`, () => rename(name, isDirectory)));
    if (canDelete) cell.append(button('Delete', `Delete ${name}`, () => remove(name, isDirectory), true));
  }
}

async function rename(name, isDirectory) {
  const newName = await ask({ title: `Rename ${isDirectory ? 'folder' : 'file'}`, message: name, label: 'New name', value: name, confirm: 'Rename' });
  if (newName === null || newName === name) return;
  try {
    await api('PUT', `${entryUrl(name, false)}?action=rename`, { newName });
    announce(`Renamed ${name} to ${newName}`);
    await refresh();
  } catch (error) {
    announce(error.message, true);
  }
}

async function remove(name, isDirectory) {
  const confirmed = await ask({
    title: `Delete ${isDirectory ? 'folder' : 'file'}?`,
    message: isDirectory ? `${name} and everything in it will be deleted. This cannot be undone.` : `${name} will be deleted. This cannot be undone.`,
    confirm: 'Delete',
    danger: true,
  });
  if (!confirmed) return;
  try {
    await api('DELETE', entryUrl(name, false));
    announce(`Deleted ${name}`);
    await refresh();
  } catch (error) {
    announce(error.message, true);
  }
}

// ---- refreshing the listing ----------------------------------------------------------------------------------

let refreshing = null;
let again = false;
/** Re-renders the table from the server (one request at a time; a change during one asks for another). */
async function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      if (await refreshParts(['entries', 'pages'])) decorateRows();
    } while (again);
  })().finally(() => (refreshing = null));
  return refreshing;
}

// ---- uploads -----------------------------------------------------------------------------------------------

const list = document.getElementById('uploads');
let queue = Promise.resolve();

/** Queues files ({file, path: relative path inside this folder}); they go one after the other. */
function enqueue(items) {
  if (items.length === 0) return;
  announce(`Uploading ${items.length} ${items.length === 1 ? 'file' : 'files'}`);
  const jobs = items.map((item) => ({ ...item, view: uploadView(item.path, item.file.size) }));
  for (const job of jobs) queue = queue.then(() => (job.file.size >= RESUMABLE_BYTES ? sendResumable(job) : send(job)));
  const batch = queue;
  void batch.then(() => {
    const failed = jobs.filter((job) => job.failed).length;
    announce(failed ? `${failed} of ${jobs.length} uploads failed` : `Uploaded ${jobs.length} ${jobs.length === 1 ? 'file' : 'files'}`, failed > 0);
    return refresh();
  });
}

function uploadView(path, size) {
  const item = document.createElement('li');
  const name = document.createElement('span');
  name.className = 'file';
  name.textContent = path;
  const amount = document.createElement('span');
  amount.textContent = humanSize(size);
  const progress = document.createElement('progress');
  progress.max = Math.max(size, 1);
  progress.value = 0;
  progress.setAttribute('aria-label', `Upload of ${path}`);
  const result = document.createElement('span');
  result.className = 'result';
  result.textContent = 'Waiting';
  item.append(name, amount, progress, result);
  list.prepend(item);
  return { item, progress, result };
}

function send(job) {
  return new Promise((resolve) => {
    const { view } = job;
    // XMLHttpRequest, not fetch: only it reports upload progress. The File itself is the body: the browser reads
    // it from disk as it sends, so a file of any size costs the page no memory.
    const request = new XMLHttpRequest();
    request.open('POST', `${folderUrl}${encodeRelative(job.path)}`);
    request.setRequestHeader('accept', 'application/json');
    request.setRequestHeader('content-type', 'application/octet-stream');
    request.responseType = 'json';
    request.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) {
        view.progress.max = event.total;
        view.progress.value = event.loaded;
        view.result.textContent = `${Math.floor((event.loaded / event.total) * 100)}%`;
      }
    });
    request.addEventListener('load', () => {
      const json = request.response;
      if (request.status === 200 || request.status === 201) {
        view.progress.value = view.progress.max;
        view.result.textContent = `Done · SHA-256 ${json?.data?.file?.checksum ?? ''}`;
        view.result.classList.add('done');
        view.item.dataset.state = 'done';
      } else {
        job.failed = true;
        view.result.textContent = messageOf(json, request.status);
        view.result.classList.add('failed');
        view.item.dataset.state = 'failed';
      }
      resolve();
    });
    const failed = (text) => () => {
      job.failed = true;
      view.result.textContent = text;
      view.result.classList.add('failed');
      view.item.dataset.state = 'failed';
      resolve();
    };
    request.addEventListener('error', failed('The connection failed before the upload completed'));
    request.addEventListener('abort', failed('Cancelled'));
    view.result.textContent = '0%';
    request.send(job.file);
  });
}

const sharePath = (relative) => (folder === '/' ? `/${relative}` : `${folder}/${relative}`);

/** A large file through tus: progress, a Pause/Resume button; resolves once done, failed or paused. */
function sendResumable(job) {
  const { view } = job;
  remembered.get(sharePath(job.path))?.remove();
  const setState = (state, text) => {
    view.item.dataset.state = state;
    view.result.classList.toggle('failed', state === 'failed');
    view.result.classList.toggle('done', state === 'done');
    if (text !== undefined) view.result.textContent = text;
  };
  const upload = resumableUpload(job.file, shareTarget(sharePath(job.path), job.file), {
    progress(sent) {
      view.progress.value = sent;
      view.result.textContent = `${Math.floor((sent / Math.max(job.file.size, 1)) * 100)}%`;
    },
    state: setState,
  });
  const toggle = button('Pause', `Pause the upload of ${job.path}`, () => {
    if (view.item.dataset.state === 'paused') void run();
    else upload.pause();
  });
  view.item.append(toggle);
  const run = async () => {
    job.failed = false;
    toggle.textContent = 'Pause';
    toggle.setAttribute('aria-label', `Pause the upload of ${job.path}`);
    try {
      const { sha256 } = await upload.start();
      view.progress.value = view.progress.max;
      setState('done', `Done · SHA-256 ${sha256}`);
      toggle.remove();
    } catch (error) {
      if (error.paused) {
        setState('paused', `Paused at ${view.progress.value === 0 ? 0 : Math.floor((view.progress.value / view.progress.max) * 100)}%`);
        toggle.textContent = 'Resume';
        toggle.setAttribute('aria-label', `Resume the upload of ${job.path}`);
        return;
      }
      job.failed = true;
      setState('failed', error.message);
      toggle.remove();
    }
  };
  return run();
}

/** Uploads this browser left unfinished here (a reload, a closed tab): choosing the same file again continues them. */
const remembered = new Map();
function showRemembered() {
  for (const { path, size } of rememberedUploads(folder)) {
    const view = uploadView(path, size);
    remembered.set(path, view.item);
    view.item.dataset.state = 'interrupted';
    view.result.textContent = 'Interrupted: choose the same file again to continue where it stopped';
  }
}

function humanSize(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Every file below a dropped folder entry, with its path relative to the drop. */
async function filesOfEntry(entry, prefix) {
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    return [{ file, path: `${prefix}${entry.name}` }];
  }
  if (!entry.isDirectory) return [];
  const reader = entry.createReader();
  const children = [];
  // readEntries answers in batches until an empty one.
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) break;
    children.push(...batch);
  }
  const nested = await Promise.all(children.map((child) => filesOfEntry(child, `${prefix}${entry.name}/`)));
  return nested.flat();
}

async function droppedFiles(transfer) {
  const entries = [...(transfer.items ?? [])].filter((item) => item.kind === 'file').map((item) => item.webkitGetAsEntry?.());
  // Entries exist for what the user dragged from the desktop (folders included); plain Files otherwise.
  if (entries.length > 0 && entries.every(Boolean)) return (await Promise.all(entries.map((entry) => filesOfEntry(entry, '')))).flat();
  return [...transfer.files].map((file) => ({ file, path: file.name }));
}

function setUpUploads() {
  document.getElementById('plain-upload')?.setAttribute('hidden', '');
  const panel = document.getElementById('upload-panel');
  panel.hidden = false;
  const zone = document.getElementById('drop-zone');
  const pickFiles = document.getElementById('pick-files');
  const pickFolder = document.getElementById('pick-folder');
  pickFiles.addEventListener('change', () => {
    enqueue([...pickFiles.files].map((file) => ({ file, path: file.name })));
    pickFiles.value = '';
  });
  pickFolder.addEventListener('change', () => {
    enqueue([...pickFolder.files].map((file) => ({ file, path: file.webkitRelativePath || file.name })));
    pickFolder.value = '';
  });
  // The whole page takes drops, the zone shows it.
  document.addEventListener('dragover', (event) => {
    if (![...(event.dataTransfer?.types ?? [])].includes('Files')) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    zone.classList.add('over');
  });
  document.addEventListener('dragleave', (event) => {
    if (event.relatedTarget === null) zone.classList.remove('over');
  });
  document.addEventListener('drop', async (event) => {
    if (!event.dataTransfer || event.dataTransfer.files.length === 0) return;
    event.preventDefault();
    zone.classList.remove('over');
    try {
      enqueue(await droppedFiles(event.dataTransfer));
    } catch (error) {
      announce(`Could not read the dropped files: ${error.message}`, true);
    }
  });
  document.getElementById('new-folder').addEventListener('click', async () => {
    const folderName = await ask({ title: 'New folder', message: `In ${folder}`, label: 'Folder name', confirm: 'Create' });
    if (!folderName) return;
    try {
      await api('POST', `${folderUrl}folders`, { folderName });
      announce(`Created folder ${folderName}`);
      await refresh();
    } catch (error) {
      announce(error.message, true);
    }
  });
}

// ---- live updates --------------------------------------------------------------------------------------------

const inThisFolder = (path) =>
  typeof path === 'string' && (folder === '/' ? path.indexOf('/', 1) === -1 : path.startsWith(`${folder}/`) && path.indexOf('/', folder.length + 1) === -1);

function listen() {
  if (!('EventSource' in window)) return;
  const events = new EventSource('/events');
  // Whether changes arrive live (tests and people can tell; a reconnect resumes from the last event id).
  events.addEventListener('open', () => (body.dataset.live = 'on'));
  events.addEventListener('error', () => (body.dataset.live = 'off'));
  let timer;
  const changed = (event) => {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    const paths = [data.filePath, data.folderPath, data.oldPath, data.newPath];
    if (!paths.some(inThisFolder)) return;
    // A burst (a folder upload) becomes one refresh.
    clearTimeout(timer);
    timer = setTimeout(() => void refresh(), 150);
  };
  for (const name of ['checksum-update', 'file-deleted', 'folder-created', 'file-renamed']) events.addEventListener(name, changed);
  events.addEventListener('resync', () => void refresh());
  // Signed out elsewhere or the key revoked: stop rather than retry into 401s.
  events.addEventListener('access-ended', () => events.close());
  window.addEventListener('pagehide', () => events.close());
}

decorateRows();
if (canUpload && document.getElementById('upload-panel')) {
  setUpUploads();
  showRemembered();
}
listen();
