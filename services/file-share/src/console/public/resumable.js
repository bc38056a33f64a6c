/* global XMLHttpRequest, localStorage, setTimeout, clearTimeout, TextEncoder */
// Resumable uploads from the browser: a small tus 1.0 client (creation, then PATCHes of CHUNK bytes, each a slice
// of the File the browser reads from disk), used by the console (/api/uploads, shareTarget) and by a file request's
// page (/-/tus/<token>, requestTarget). It survives
// - a network cut: a failed PATCH is retried after a growing pause, from the offset the server answers to HEAD;
// - a page reload: the upload's URL is kept in localStorage under the file's destination, size and modification
//   time, and choosing the same file again for the same destination continues it from the server's offset.
// Pause aborts the request in flight (the server drops that chunk whole); Resume asks the offset and goes on.
const ENDPOINT = '/api/uploads';
const CHUNK = 8 * 1024 * 1024;
const RETRY_MS = [1000, 2000, 4000, 8000, 10000];
const STORE_PREFIX = 'boxyard-tus:';
// A file request's uploads are remembered apart: the console never lists them as its own.
const REQUEST_STORE_PREFIX = 'boxyard-tus-request:';

const b64 = (text) => {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return globalThis.btoa(binary);
};

const fileType = (file) => file.type || 'application/octet-stream';

/** Where a file goes, as the upload needs it: the endpoint, the Upload-Metadata pairs, the key it is remembered by. */
export function shareTarget(path, file) {
  return {
    endpoint: ENDPOINT,
    metadata: { path, filetype: fileType(file) },
    remember: `${STORE_PREFIX}${JSON.stringify([path, file.size, file.lastModified])}`,
  };
}

/** A file request's endpoint (`/-/tus/<token>`): the file keeps its own name in the request's folder. */
export function requestTarget(endpoint, file) {
  return {
    endpoint,
    metadata: { filename: file.name, filetype: fileType(file) },
    remember: `${REQUEST_STORE_PREFIX}${JSON.stringify([endpoint, file.name, file.size, file.lastModified])}`,
  };
}

const metadataHeader = (metadata) =>
  Object.entries(metadata)
    .map(([name, value]) => `${name} ${b64(value)}`)
    .join(',');

/** Unfinished uploads this browser remembers whose destination is directly inside `folder` (for the page to list). */
export function rememberedUploads(folder) {
  const found = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (!key?.startsWith(STORE_PREFIX)) continue;
    try {
      const [path, size] = JSON.parse(key.slice(STORE_PREFIX.length));
      const parent = path.slice(0, path.lastIndexOf('/')) || '/';
      if (parent === folder || path.startsWith(folder === '/' ? '/' : `${folder}/`)) found.push({ path, size });
    } catch {
      localStorage.removeItem(key);
    }
  }
  return found;
}

/** One XMLHttpRequest as a promise of {status, headers}; progress reports the bytes of the body sent so far. */
function request(method, url, headers, body, onProgress, onStart) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.setRequestHeader('tus-resumable', '1.0.0');
    xhr.setRequestHeader('accept', 'application/json');
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.responseType = 'json';
    if (onProgress) xhr.upload.addEventListener('progress', (event) => onProgress(event.loaded));
    xhr.addEventListener('load', () => resolve({ status: xhr.status, header: (name) => xhr.getResponseHeader(name), json: xhr.response }));
    xhr.addEventListener('error', () => reject(Object.assign(new Error('The connection failed'), { network: true })));
    xhr.addEventListener('abort', () => reject(Object.assign(new Error('Paused'), { paused: true })));
    onStart?.(xhr);
    xhr.send(body ?? null);
  });
}

/**
 * A resumable upload of `file` to `target` (shareTarget, requestTarget). `view` gets {progress(sent), state(name,
 * text)} calls. start() resolves with {sha256} when the file is stored, or rejects (paused, refused).
 */
export function resumableUpload(file, target, view) {
  const key = target.remember;
  let xhr;
  let paused = false;
  let wake;

  async function create() {
    const response = await request('POST', target.endpoint, { 'upload-length': String(file.size), 'upload-metadata': metadataHeader(target.metadata) });
    if (response.status !== 201) throw Object.assign(new Error(messageOf(response)), { final: true });
    const url = response.header('location');
    localStorage.setItem(key, url);
    return url;
  }

  /** The server's offset, or undefined when the remembered upload is gone (expired, terminated). */
  async function offsetOf(url) {
    const response = await request('HEAD', url, {});
    if (response.status === 200) return Number(response.header('upload-offset'));
    if (response.status === 404 || response.status === 410) return undefined;
    throw new Error(`The server answered ${response.status}`);
  }

  async function sendFrom(url, offset) {
    for (;;) {
      const end = Math.min(offset + CHUNK, file.size);
      const response = await request(
        'PATCH',
        url,
        { 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
        file.slice(offset, end),
        (sent) => view.progress(offset + sent),
        (started) => (xhr = started),
      );
      if (response.status !== 204) {
        const error = Object.assign(new Error(messageOf(response)), { final: response.status !== 409 && response.status !== 423 });
        throw error;
      }
      offset = Number(response.header('upload-offset'));
      view.progress(offset);
      if (offset >= file.size) return response.header('upload-file-sha256') ?? '';
    }
  }

  async function attempt() {
    let url = localStorage.getItem(key);
    let offset = url ? await offsetOf(url) : undefined;
    if (offset === undefined) {
      url = await create();
      offset = 0;
    }
    view.progress(offset);
    return sendFrom(url, offset);
  }

  async function start() {
    paused = false;
    for (let failures = 0; ; ) {
      view.state('sending');
      try {
        const sha256 = await attempt();
        localStorage.removeItem(key);
        return { sha256 };
      } catch (error) {
        if (paused || error.paused) throw Object.assign(new Error('Paused'), { paused: true });
        if (error.final) {
          localStorage.removeItem(key);
          throw error;
        }
        // A cut connection or a conflict: wait, then continue from the offset the server has.
        const delay = RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)];
        view.state('retrying', `Connection lost; retrying in ${delay / 1000} s`);
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, delay);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        if (paused) throw Object.assign(new Error('Paused'), { paused: true });
      }
    }
  }

  return {
    start,
    pause() {
      paused = true;
      xhr?.abort();
      wake?.();
    },
  };
}

function messageOf(response) {
  const message = response.json?.message;
  return typeof message === 'string' ? message : `The server answered ${response.status}`;
}
