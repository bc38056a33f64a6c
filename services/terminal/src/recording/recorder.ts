// One session's recording as one gateway writes it: the agent's observer stream (agent/shell-session.ts observe)
// turned into asciicast events, buffered, and stored as a chunk every `flush_seconds` (or sooner when large).
// Flushes run one at a time; while one is slow and much is pending, the stream is paused, which pauses the
// shell's output (the agent paces the pty by its slowest socket) rather than growing a buffer without bound.
import { StringDecoder } from 'node:string_decoder';
import type { ObjectStore } from '@boxyard/kit';
import type { WebSocket } from 'ws';
import { eventLine, visibleText, type EventCode } from './cast.ts';
import type { RecordingStore } from './store.ts';

/** A chunk is cut at this size even before its time is up (large: a flood then costs few puts and commits). */
const CHUNK_BYTES = 2 * 1024 * 1024;
/** Pending bytes above which the agent's stream is paused until the running flush is done. */
const PAUSE_BYTES = 16 * 1024 * 1024;
/** Text indexed per chunk at most (tsvector has its own 1 MiB limit; a flood's words repeat anyway). */
const INDEX_CHARS = 64 * 1024;

export type RecorderEnd = 'complete' | 'truncated' | 'failed' | 'released';

export interface RecorderOptions {
  id: string;
  writer: string;
  objects: ObjectStore;
  store: RecordingStore;
  /** When the recording began (ms): every event's time is counted from here, also after a takeover. */
  startedAt: number;
  /** The next chunk's number and the bytes stored so far (a takeover continues both). */
  seq: number;
  bytes: number;
  maxBytes: number;
  flushMs: number;
  leaseSeconds: number;
  input: boolean;
  /** The store refused a chunk (recording.mode `required` ends the session). */
  onFailure(error: Error): void;
  onEnd(end: RecorderEnd): void;
  log: { warn(object: object, message: string): void };
  countBytes?(bytes: number): void;
}

async function* once(data: Buffer): AsyncIterable<Uint8Array> {
  yield data;
}

export const chunkKey = (id: string, seq: number) => `recordings/${id}/${String(seq).padStart(8, '0')}.jsonl`;

export class Recorder {
  readonly #o: RecorderOptions;
  readonly #socket: WebSocket;
  readonly #decoder = new StringDecoder('utf8');
  #lines: string[] = [];
  #pending = 0;
  #firstAt: number | undefined;
  #lastAt = 0;
  #words = '';
  /** Agent output offset up to which events are buffered or stored. */
  #offset = 0;
  #seq: number;
  #bytes: number;
  #flushing: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout;
  #ended = false;
  #exitSeen = false;
  #paused = false;

  constructor(options: RecorderOptions, socket: WebSocket) {
    this.#o = options;
    this.#socket = socket;
    this.#seq = options.seq;
    this.#bytes = options.bytes;
    // Every flush renews the lease; an idle recording still flushes nothing but renews it.
    this.#timer = setInterval(() => void this.flush(), options.flushMs);
    this.#timer.unref();
    socket.on('message', (data: Buffer, isBinary: boolean) => (isBinary ? this.#output(data) : this.#control(data.toString('utf8'))));
    socket.on('close', () => void this.#closed());
    socket.on('error', () => socket.terminate());
    // Something to store at once: a store that cannot take it fails the recording now, not at the first output.
    this.#add('m', options.seq === 0 ? 'recording started' : 'recording resumed by another gateway');
  }

  #now = () => (Date.now() - this.#o.startedAt) / 1000;

  #add(code: EventCode, data: string, at = this.#now()): void {
    if (this.#ended) return;
    const line = eventLine(at, code, data);
    if (this.#bytes + this.#pending + line.length > this.#o.maxBytes) return this.#truncate();
    this.#lines.push(line);
    this.#pending += line.length;
    this.#firstAt ??= at;
    this.#lastAt = at;
    if (code === 'o' && this.#words.length < INDEX_CHARS) this.#words += visibleText(data);
    if (this.#pending >= CHUNK_BYTES) void this.flush();
    if (this.#pending >= PAUSE_BYTES && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    }
  }

  #output(data: Buffer): void {
    this.#offset += data.length;
    const text = this.#decoder.write(data);
    if (text) this.#add('o', text);
  }

  #control(text: string): void {
    let message: { type?: string; offset?: number; gap?: boolean; cols?: number; rows?: number; data?: string };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (message.type === 'recording') {
      this.#offset = message.offset ?? 0;
      if (message.gap) this.#add('m', 'output missing here: it was produced while no gateway was recording');
      if (message.cols && message.rows) this.#add('r', `${message.cols}x${message.rows}`);
    } else if (message.type === 'resize' && message.cols && message.rows) this.#add('r', `${message.cols}x${message.rows}`);
    else if (message.type === 'input' && this.#o.input && typeof message.data === 'string') this.#add('i', message.data);
    else if (message.type === 'exit') this.#exitSeen = true;
  }

  /** Stores what is pending as the next chunk (after the flush already running, if any). */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#store());
    return this.#flushing;
  }

  async #store(): Promise<void> {
    if (this.#lines.length === 0) {
      if (!this.#ended) await this.#o.store.renew(this.#o.id, this.#o.writer, this.#o.leaseSeconds).catch(() => {});
      return;
    }
    const body = this.#lines.join('');
    const chunk = { seq: this.#seq, firstAt: this.#firstAt ?? this.#lastAt, lastAt: this.#lastAt, words: this.#words, offset: this.#offset };
    this.#lines = [];
    this.#pending = 0;
    this.#firstAt = undefined;
    this.#words = '';
    if (this.#paused) {
      this.#paused = false;
      this.#socket.resume();
    }
    const key = chunkKey(this.#o.id, chunk.seq);
    try {
      const stored = await this.#o.objects.put(key, once(Buffer.from(body)), { contentType: 'application/jsonl', size: Buffer.byteLength(body) });
      const kept = await this.#o.store.commitChunk({
        id: this.#o.id, writer: this.#o.writer, seq: chunk.seq, firstAt: chunk.firstAt, lastAt: chunk.lastAt, bytes: stored.size,
        key, words: chunk.words, outputOffset: chunk.offset, leaseSeconds: this.#o.leaseSeconds,
      });
      if (!kept) throw new Error('the recording was taken over by another gateway');
      this.#seq++;
      this.#bytes += stored.size;
      this.#o.countBytes?.(stored.size);
    } catch (error) {
      this.#o.log.warn({ err: error, recording: this.#o.id }, 'could not store a recording chunk');
      this.#end('failed');
      this.#o.onFailure(error as Error);
    }
  }

  #truncate(): void {
    if (this.#ended) return;
    const line = eventLine(this.#now(), 'm', 'recording stopped: size limit reached (recording.max_bytes)');
    this.#lines.push(line);
    this.#pending += line.length;
    void this.flush().then(() => this.#end('truncated'));
    this.#ended = true;
  }

  #end(end: RecorderEnd): void {
    clearInterval(this.#timer);
    const first = !this.#ending;
    this.#ending = true;
    this.#ended = true;
    if (this.#socket.readyState === this.#socket.OPEN) this.#socket.close(1000, 'recording ended');
    if (!first) return;
    const state = end === 'released' ? 'recording' : end;
    void this.#o.store.finish(this.#o.id, this.#o.writer, state).catch(() => {}).then(() => this.#o.onEnd(end));
  }

  #ending = false;

  async #closed(): Promise<void> {
    const tail = this.#decoder.end();
    if (tail) this.#add('o', tail);
    await this.flush();
    if (!this.#ending) this.#end(this.#exitSeen ? 'complete' : 'released');
  }

  /** The gateway is shutting down: store what is pending and let another gateway take the recording over. */
  async close(): Promise<void> {
    if (this.#ending) return;
    this.#socket.removeAllListeners('close');
    this.#ended = true;
    await this.flush();
    this.#end('released');
  }
}
