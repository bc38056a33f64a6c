/* global document, window, location, history, fetch, sessionStorage, crypto, WebSocket, EventTarget, MessageEvent, TextEncoder, FormData, setTimeout, clearTimeout, setInterval, clearInterval */
// The browser terminal: sign in, start or reattach to this tab's session, and attach xterm.js to its socket.
// Frame format (see protocol.ts): binary frames carry terminal data both ways, text frames carry JSON control
// messages. xterm's AttachAddon sends typed text as text frames and writes every incoming frame to the
// screen, so it is given a small channel object that routes control messages here and turns input into
// binary frames.
import { Terminal } from '/vendor/xterm.mjs';
import { FitAddon } from '/vendor/addon-fit.mjs';
import { AttachAddon } from '/vendor/addon-attach.mjs';
import { listRecordings, openReplay, replayFromHash } from '/assets/recordings.js';

const $ = (id) => document.getElementById(id);
const encoder = new TextEncoder();
const COOKIE_KEY = 'boxyard-terminal-cookie';
const HEARTBEAT_MS = 25_000;

function setStatus(text, isError = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', isError);
}

/**
 * A JSON API call. A request that gets no answer (connection reset, network changed, server gone) resolves with
 * status 0 instead of throwing, so every caller shows it instead of leaving the page hanging.
 */
async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body ? { 'content-type': 'application/json', accept: 'application/json' } : { accept: 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (error) {
    return { status: 0, json: { message: `could not reach the server (${error?.message ?? 'network error'})` } };
  }
  const json = await response.json().catch(() => ({}));
  return { status: response.status, json };
}

/** One terminal_cookie per tab: a reload reattaches to the same shell, another tab gets its own. */
function terminalCookie() {
  let cookie = sessionStorage.getItem(COOKIE_KEY);
  if (!cookie) {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    cookie = `browser-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
    sessionStorage.setItem(COOKIE_KEY, cookie);
  }
  return cookie;
}

/** The WebSocket as AttachAddon sees it: only terminal data comes through; input leaves as binary frames. */
class TerminalChannel extends EventTarget {
  constructor(url, onControl) {
    super();
    this.socket = new WebSocket(url);
    this.socket.binaryType = 'arraybuffer';
    this.socket.addEventListener('message', (event) => {
      if (typeof event.data === 'string') {
        try {
          onControl(JSON.parse(event.data));
        } catch {
          // not a control message: ignore
        }
        return;
      }
      this.dispatchEvent(new MessageEvent('message', { data: event.data }));
    });
    for (const type of ['open', 'close', 'error']) {
      this.socket.addEventListener(type, (event) => this.dispatchEvent(new event.constructor(type, event)));
    }
  }
  get readyState() {
    return this.socket.readyState;
  }
  get binaryType() {
    return 'arraybuffer';
  }
  set binaryType(_value) {
    // always arraybuffer
  }
  send(data) {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(typeof data === 'string' ? encoder.encode(data) : data);
  }
  control(message) {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }
  close() {
    this.socket.close(1000, 'bye');
  }
}

const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, convertEol: false });
const fit = new FitAddon();
term.loadAddon(fit);
let opened = false;
let channel;
let attach;
let heartbeat;
/** The last error the server explained (shown when it then closes the socket). */
let lastError;
let retryDelay = 1000;
let retryTimer;
/** Counts connect() calls: an answer to an older one is dropped. */
let attempts = 0;
let ended = false;
/** The provider sign-in (auth.sign_in) when the service offers one: GET /auth/methods. */
let sso;

/** Offers "Sign in with <provider>" when the service has provider sign-in. */
async function offerSso() {
  const { json } = await api('GET', '/auth/methods');
  sso = json.data?.methods?.find((method) => method.type === 'oidc');
  if (!sso) return;
  $('sso-link').textContent = `Sign in with ${sso.display_name}`;
  $('sso-link').href = `${sso.path.split('?')[0]}?return_to=${encodeURIComponent(location.pathname)}`;
  $('sso').hidden = false;
}

function showLogin(message = '') {
  $('terminal').hidden = true;
  $('recordings').hidden = true;
  $('show-recordings').hidden = true;
  $('show-terminal').hidden = true;
  $('logout').hidden = true;
  $('new-session').hidden = true;
  $('who').textContent = '';
  $('login').hidden = false;
  $('login-error').textContent = message;
  setStatus('');
}

function disconnect() {
  attempts++; // a start still under way is answered into nothing (signed out, or superseded)
  clearInterval(heartbeat);
  clearTimeout(retryTimer);
  $('retry').hidden = true;
  attach?.dispose();
  attach = undefined;
  if (channel) {
    const old = channel;
    channel = undefined;
    old.close();
  }
}

/**
 * Says what failed and tries again after a growing delay (1, 2, 4 … 15 s). Safe for start, attach and reattach:
 * start is idempotent per terminal_cookie, so a retry reaches the session an unanswered start created instead of
 * a second one. "Try again" skips the wait.
 */
function scheduleReconnect(reason) {
  clearTimeout(retryTimer);
  setStatus(`${reason}; retrying in ${Math.round(retryDelay / 1000)} s…`, true);
  $('retry').hidden = false;
  retryTimer = setTimeout(() => void connect(), retryDelay);
  retryDelay = Math.min(15_000, retryDelay * 2);
}

/** A start that did not answer 200: retried when retrying can help, else said, with "Try again" at hand. */
function startFailed(status, json) {
  const why = json.message ?? `status ${status}`;
  // The gateway's 503 already says "Could not start the terminal: <reason>".
  const text = why.startsWith('Could not start') ? why : `Could not start the terminal: ${why}`;
  if (status === 0 || status === 408 || status === 429 || status >= 500) return scheduleReconnect(text);
  setStatus(text, true);
  $('retry').hidden = false;
}

function onControl(message) {
  if (message.type === 'exit') {
    ended = true;
    const how = message.reason === 'exited' ? `shell exited with code ${message.code}` : `session ended: ${message.reason.replace('_', ' ')}`;
    term.write(`\r\n\x1b[2m[${how}]\x1b[0m\r\n`);
    setStatus(how);
    $('new-session').hidden = false;
  } else if (message.type === 'notice') {
    // Said before anything else on attach, e.g. that the session is recorded.
    term.write(`\x1b[2m[${message.message}]\x1b[0m\r\n`);
  } else if (message.type === 'error') {
    lastError = message.message;
    setStatus(message.message, true);
  }
}

function showTerminal() {
  $('login').hidden = true;
  $('recordings').hidden = true;
  $('terminal').hidden = false;
  $('logout').hidden = false;
  $('show-recordings').hidden = false;
  $('show-terminal').hidden = true;
  if (!opened) {
    term.open($('terminal'));
    opened = true;
  }
  fit.fit();
}

/** Starts (or reattaches to) this tab's session and attaches to it; a newer call supersedes one under way. */
async function connect() {
  disconnect();
  const attempt = ++attempts;
  lastError = undefined;
  ended = false;
  $('new-session').hidden = true;
  setStatus('Starting…');
  const { status, json } = await api('POST', '/api/terminal/start', { terminal_cookie: terminalCookie() });
  if (attempt !== attempts) return;
  if (status === 401) return showLogin();
  if (status !== 200 || !json.data?.websocket_path) return startFailed(status, json);
  showTerminal();
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${json.data.websocket_path}`;
  const current = new TerminalChannel(url, onControl);
  channel = current;
  let attached = false;
  current.addEventListener('open', () => {
    attached = true;
    retryDelay = 1000;
    // The replay of the scrollback follows: start from a clean screen so nothing shows twice (a notice, if any,
    // came in the same read as the open and is written after this).
    term.reset();
    attach = new AttachAddon(current);
    term.loadAddon(attach);
    current.control({ type: 'resize', cols: term.cols, rows: term.rows });
    heartbeat = setInterval(() => current.control({ type: 'ping' }), HEARTBEAT_MS);
    setStatus(json.data.reattached ? 'Reattached' : 'Connected');
    term.focus();
  });
  current.addEventListener('close', (event) => {
    if (channel !== current) return;
    clearInterval(heartbeat);
    // 4401: the sign-in ended (signed out elsewhere, expired): sign in again. 4403: access withdrawn: say why.
    if (event.code === 4401) {
      disconnect();
      return showLogin(event.reason === 'session ended: token expired' ? 'Your session expired; sign in again' : 'You were signed out');
    }
    if (event.code === 4403) {
      ended = true;
      return setStatus(lastError ?? 'Access withdrawn', true);
    }
    if (ended || (event.code >= 4000 && event.code < 4400)) {
      if (!ended) setStatus(event.reason || 'Session ended');
      ended = true;
      $('new-session').hidden = false;
      return;
    }
    if (!attached) return scheduleReconnect(lastError ? `Could not attach: ${lastError}` : 'Could not attach to the session');
    scheduleReconnect(event.code === 1001 ? 'Server restarting' : 'Connection lost');
  });
}

term.onResize(({ cols, rows }) => channel?.control({ type: 'resize', cols, rows }));
window.addEventListener('resize', () => {
  if (opened && !$('terminal').hidden) fit.fit();
});

$('login').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = new FormData($('login'));
  const { status, json } = await api('POST', '/auth/login/basic', { username: form.get('username'), password: form.get('password') });
  if (status !== 200) return showLogin(json.message ?? 'Sign-in failed');
  $('who').textContent = json.data.user.username;
  $('login').reset();
  await connect();
});

$('logout').addEventListener('click', async () => {
  disconnect();
  if (sso) {
    // Ends this service's session, then the provider's: it answers where the provider's sign-out is.
    const { json } = await api('POST', sso.logout);
    if (json.data?.end_session_url) return location.assign(json.data.end_session_url);
  } else {
    await api('POST', '/auth/logout');
  }
  showLogin('Signed out');
});

$('new-session').addEventListener('click', () => {
  term.reset();
  void connect();
});

/** The recordings view (list, search, player) in place of the terminal; the session stays attached meanwhile. */
async function showRecordings() {
  $('login').hidden = true;
  $('terminal').hidden = true;
  $('recordings').hidden = false;
  $('logout').hidden = false;
  $('show-recordings').hidden = true;
  $('show-terminal').hidden = false;
  await listRecordings();
}

$('show-recordings').addEventListener('click', () => void showRecordings());
$('show-terminal').addEventListener('click', () => {
  history.replaceState(null, '', location.pathname);
  if (channel) {
    $('recordings').hidden = true;
    $('terminal').hidden = false;
    $('show-recordings').hidden = false;
    $('show-terminal').hidden = true;
    fit.fit();
    term.focus();
  } else void connect();
});

// "Try again": now instead of after the back-off (connect() cancels the pending retry).
$('retry').addEventListener('click', () => void connect());

await offerSso();
const { status, json } = await api('GET', '/auth/status');
const replay = replayFromHash();
if (status === 0 || status >= 500) {
  // The server did not answer: the start's own retries (and its 401 → sign-in) take it from here.
  scheduleReconnect(`Could not load the terminal: ${json.message ?? `status ${status}`}`);
} else if (json.data?.authenticated) {
  $('who').textContent = json.data.user.username;
  if (replay) {
    await showRecordings();
    await openReplay(replay.id, replay.t);
  } else await connect();
} else {
  showLogin();
}
