/* global document, fetch, location, history, performance, requestAnimationFrame, URLSearchParams */
// Recordings in the terminal page: the list (one's own; admins: everyone's), search over recorded output, and a
// player that replays a recording's asciicast v2 into an xterm.js of its own (no WebAssembly, so the page's
// strict CSP stays as it is), with play/pause, seek, speed and idle-skip. `#replay=<id>&t=<seconds>` opens a
// replay at that moment (search results link there).
import { Terminal } from '/vendor/xterm.mjs';

const $ = (id) => document.getElementById(id);
/** Idle-skip: pauses longer than this play as this long (asciinema's idle_time_limit). */
const IDLE_LIMIT = 1;

async function getJson(path) {
  const response = await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  const json = await response.json().catch(() => ({}));
  return { status: response.status, json };
}

const el = (tag, props = {}, children = []) => {
  const node = document.createElement(tag);
  Object.assign(node, props);
  for (const child of children) node.append(child);
  return node;
};

const seconds = (s) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;

/** A parsed recording: output events on the recording's clock, and the same on the idle-skipping clock. */
function parseCast(text) {
  const lines = text.split('\n').filter(Boolean);
  const header = JSON.parse(lines[0]);
  const events = [];
  let skipped = 0;
  let previous = 0;
  for (const line of lines.slice(1)) {
    const [t, code, data] = JSON.parse(line);
    if (code !== 'o' && code !== 'r') continue;
    skipped += Math.min(t - previous, IDLE_LIMIT);
    previous = t;
    events.push({ t, skip: skipped, code, data });
  }
  return { header, events, duration: previous, skippedDuration: skipped };
}

class Player {
  constructor() {
    this.term = new Terminal({ fontSize: 14, scrollback: 5000, disableStdin: true, convertEol: false });
    this.opened = false;
    this.playing = false;
    this.position = 0;
    this.next = 0;
    this.speed = 1;
    this.idleSkip = false;
  }

  /** Time of an event on the clock in use. */
  at(event) {
    return this.idleSkip ? event.skip : event.t;
  }

  get length() {
    return this.idleSkip ? this.cast.skippedDuration : this.cast.duration;
  }

  async load(id) {
    this.pause();
    const response = await fetch(`/api/terminal/recordings/${encodeURIComponent(id)}/cast`, { credentials: 'same-origin' });
    if (response.status !== 200) {
      const json = await response.json().catch(() => ({}));
      throw new Error(json.message ?? `could not load the recording (${response.status})`);
    }
    this.cast = parseCast(await response.text());
    this.id = id;
    if (!this.opened) {
      this.term.open($('player-screen'));
      this.opened = true;
    }
    this.term.resize(this.cast.header.width, this.cast.header.height);
    $('download').href = `/api/terminal/recordings/${encodeURIComponent(id)}/cast`;
    $('download').download = `${id}.cast`;
    this.seek(0);
  }

  /** Rebuilds the screen as it was at `time` (clock in use): a reset, then all output up to then in one write. */
  seek(time) {
    const target = Math.max(0, Math.min(time, this.length));
    this.term.reset();
    let out = '';
    let i = 0;
    for (; i < this.cast.events.length && this.at(this.cast.events[i]) <= target; i++) {
      const event = this.cast.events[i];
      if (event.code === 'o') out += event.data;
      else if (this.resizeTo(event.data, out)) out = '';
    }
    if (out) this.term.write(out);
    this.next = i;
    this.position = target;
    if (this.playing) this.started = { wall: performance.now(), position: target };
    this.show();
  }

  /** Applies an `r` event ("COLSxROWS"), writing what came before it first; true when it wrote. */
  resizeTo(size, pending) {
    const [cols, rows] = size.split('x').map(Number);
    if (!cols || !rows) return false;
    if (pending) this.term.write(pending);
    this.term.resize(cols, rows);
    return true;
  }

  play() {
    if (!this.cast || this.playing) return;
    if (this.position >= this.length) this.seek(0);
    this.playing = true;
    this.started = { wall: performance.now(), position: this.position };
    $('play').textContent = 'Pause';
    requestAnimationFrame(() => this.tick());
  }

  pause() {
    this.playing = false;
    $('play').textContent = 'Play';
  }

  tick() {
    if (!this.playing) return;
    this.position = Math.min(this.length, this.started.position + ((performance.now() - this.started.wall) / 1000) * this.speed);
    let out = '';
    while (this.next < this.cast.events.length && this.at(this.cast.events[this.next]) <= this.position) {
      const event = this.cast.events[this.next++];
      if (event.code === 'o') out += event.data;
      else if (this.resizeTo(event.data, out)) out = '';
    }
    if (out) this.term.write(out);
    this.show();
    if (this.position >= this.length) return this.pause();
    requestAnimationFrame(() => this.tick());
  }

  setIdleSkip(on) {
    // Keep the place: the same event index on the other clock.
    const event = this.cast?.events[Math.max(0, this.next - 1)];
    this.idleSkip = on;
    if (this.cast) this.seek(event ? this.at(event) : 0);
  }

  /** A time on the recording's own clock (a search hit), on the clock in use. */
  fromRecordingTime(t) {
    if (!this.idleSkip) return t;
    const event = this.cast.events.findLast((e) => e.t <= t);
    return event ? event.skip + Math.min(t - event.t, IDLE_LIMIT) : 0;
  }

  show() {
    $('seek').max = String(this.length);
    $('seek').value = String(this.position);
    $('time').textContent = `${seconds(this.position)} / ${seconds(this.length)}`;
  }
}

const player = new Player();

function recordingItem(recording) {
  const open = el('button', { type: 'button', textContent: 'Replay' });
  open.addEventListener('click', () => openReplay(recording.id, 0));
  const meta = `${recording.owner.username} · ${new Date(recording.started_at).toLocaleString()} · ${seconds(recording.duration)} · ${recording.state}`;
  return el('li', {}, [
    el('span', { textContent: meta }),
    ' ',
    open,
    ' ',
    el('a', { href: recording.cast_path, download: `${recording.id}.cast`, textContent: 'Download .cast' }),
  ]);
}

export async function listRecordings() {
  const { status, json } = await getJson('/api/terminal/recordings?limit=50');
  const list = $('recording-list');
  list.replaceChildren();
  if (status !== 200) return list.append(el('li', { textContent: json.message ?? `could not list recordings (${status})` }));
  if (json.data.recordings.length === 0) list.append(el('li', { textContent: 'No recordings yet.' }));
  for (const recording of json.data.recordings) list.append(recordingItem(recording));
}

async function search(word) {
  const results = $('search-results');
  results.replaceChildren();
  const { status, json } = await getJson(`/api/terminal/recordings/search?q=${encodeURIComponent(word)}`);
  if (status !== 200) return results.append(el('li', { textContent: json.message ?? `search failed (${status})` }));
  if (json.data.hits.length === 0) results.append(el('li', { textContent: `"${word}" does not appear in any recording you can see.` }));
  for (const hit of json.data.hits) {
    const open = el('button', { type: 'button', textContent: `Open at ${seconds(hit.at)}` });
    open.addEventListener('click', () => openReplay(hit.recording_id, hit.at));
    results.append(el('li', {}, [el('span', { textContent: `${hit.owner.username} · ${new Date(hit.started_at).toLocaleString()}` }), ' ', open]));
  }
}

/** Opens a recording paused at `t` seconds of its own clock. */
export async function openReplay(id, t) {
  history.replaceState(null, '', `#replay=${id}&t=${t}`);
  $('player').hidden = false;
  $('player-error').textContent = '';
  try {
    await player.load(id);
    player.seek(player.fromRecordingTime(t));
  } catch (error) {
    $('player-error').textContent = error.message;
  }
}

/** `#replay=<id>&t=<seconds>`, or undefined. */
export function replayFromHash() {
  if (!location.hash.startsWith('#replay=')) return undefined;
  const params = new URLSearchParams(location.hash.slice(1));
  const t = Number(params.get('t') ?? 0);
  return { id: params.get('replay'), t: Number.isFinite(t) && t >= 0 ? t : 0 };
}

$('play').addEventListener('click', () => (player.playing ? player.pause() : player.play()));
$('seek').addEventListener('input', () => player.cast && player.seek(Number($('seek').value)));
$('speed').addEventListener('change', () => {
  player.speed = Number($('speed').value);
  if (player.playing) player.started = { wall: performance.now(), position: player.position };
});
$('idle-skip').addEventListener('change', () => player.setIdleSkip($('idle-skip').checked));
$('search').addEventListener('submit', (event) => {
  event.preventDefault();
  void search($('search-word').value.trim());
});
