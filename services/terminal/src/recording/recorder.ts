// One session's recording as one gateway writes it: the session's output, by absolute output offset, from
// whichever stream the feed (feed.ts) has — a user's own stream while one is attached here, else the agent's
// observer stream — turned into asciicast events, buffered, and stored as a chunk every `flush_seconds` (or
// sooner when large). Bytes already recorded are skipped, so two streams overlapping while the feed switches
// record nothing twice. Flushes run one at a time, off the user's path. When much is pending because the store
// is slow: the observer stream is paused (it paces only the recording), but a user's stream never is — the
// recorder drops what it cannot buffer and marks the gap (`required` mode: the session ends, 4305).
import { isAscii } from 'node:buffer';
import { StringDecoder } from 'node:string_decoder';
import type { ObjectStore } from '@boxyard/kit';
import { eventLine, visibleText, type EventCode } from './cast.ts';
import type { RecordingStore } from './store.ts';
import { ignoreError } from '@boxyard/kit';

/** A chunk is cut at this size even before its time is up (large: a flood then costs few puts and commits). */
const CHUNK_BYTES = 2 * 1024 * 1024;
/** Pending bytes above which the observer stream is paused, or a user's stream's output dropped. */
export const PAUSE_BYTES = 16 * 1024 * 1024;
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
  /** The next chunk's number, the bytes stored so far and the output offset recorded up to (a takeover continues all three). */
  seq: number;
  bytes: number;
  offset: number;
  maxBytes: number;
  flushMs: number;
  leaseSeconds: number;
  input: boolean;
  /** recording.mode `required`: falling further behind than PAUSE_BYTES is a failure, not a gap. */
  required: boolean;
  /** The store refused a chunk (recording.mode `required` ends the session). */
  onFailure(error: Error): void;
  onEnd(end: RecorderEnd): void;
  /** Pause (true) or resume (false) the paced stream (the observer), whose output waits for the store. */
  pace(paused: boolean): void;
  log: { warn(object: object, message: string): void };
  countBytes?(bytes: number): void;
}

/** Where a piece of output came from: a paced stream may be paused; a gap is real only where nothing else will fill it. */
export interface OutputSource {
  paced: boolean;
  mayGap: boolean;
}

async function* once(data: Buffer): AsyncIterable<Uint8Array> {
  yield data;
}

/** Whether `data` ends inside a UTF-8 character (the decoder then holds its first bytes); true when unsure. */
function endsInsideCharacter(data: Buffer): boolean {
  for (let back = 1; back <= Math.min(4, data.length); back++) {
    const byte = data[data.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back
    if (byte < 0x80) return false;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    return length > back;
  }
  return true;
}

export const chunkKey = (id: string, seq: number) => `recordings/${id}/${String(seq).padStart(8, '0')}.jsonl`;

export class Recorder {
  readonly #o: RecorderOptions;
  readonly #decoder = new StringDecoder('utf8');
  /** Event lines not stored yet, encoded already (one concat at the flush, no string join). */
  #lines: Buffer[] = [];
  /** The decoder may hold the first bytes of a character (the last output ended inside one). */
  #partial = false;
  #pending = 0;
  #firstAt: number | undefined;
  #lastAt = 0;
  #words = '';
  /** Output offset up to which events are buffered or stored. */
  #offset: number;
  #size: string | undefined;
  #seq: number;
  #bytes: number;
  #flushing: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout;
  #ended = false;
  #ending = false;
  #exitSeen = false;
  #paused = false;
  /** Output was dropped because the store fell behind: the next gap says so. */
  #behind = false;

  constructor(options: RecorderOptions) {
    this.#o = options;
    this.#seq = options.seq;
    this.#bytes = options.bytes;
    this.#offset = options.offset;
    // Every flush renews the lease; an idle recording still flushes nothing but renews it.
    this.#timer = setInterval(() => void this.flush(), options.flushMs);
    this.#timer.unref();
    // Something to store at once: a store that cannot take it fails the recording now, not at the first output.
    this.#add('m', options.seq === 0 ? 'recording started' : 'recording resumed by another gateway');
  }

  get offset(): number {
    return this.#offset;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get exitSeen(): boolean {
    return this.#exitSeen;
  }

  #now = () => (Date.now() - this.#o.startedAt) / 1000;

  /** `ascii`: `data` is ASCII, so its line is too (encoded as a copy, without UTF-8's checks). */
  #add(code: EventCode, data: string, at = this.#now(), ascii = false): void {
    if (this.#ended) return;
    const line = Buffer.from(eventLine(at, code, data), ascii ? 'latin1' : 'utf8');
    if (this.#bytes + this.#pending + line.length > this.#o.maxBytes) return this.#truncate();
    this.#lines.push(line);
    this.#pending += line.length;
    this.#firstAt ??= at;
    this.#lastAt = at;
    if (code === 'o' && this.#words.length < INDEX_CHARS) this.#words += visibleText(data);
    if (this.#pending >= CHUNK_BYTES) void this.flush();
  }

  /** Output bytes `data` at absolute offset `start` of the session's output. */
  output(start: number, data: Buffer, source: OutputSource): void {
    if (this.#ended || start + data.length <= this.#offset) return;
    if (!source.paced && this.#pending >= PAUSE_BYTES) return this.#fallBehind();
    if (start > this.#offset) {
      if (!source.mayGap) return; // another stream is still bringing what comes before
      this.#missing(start);
    }
    const fresh = start < this.#offset ? data.subarray(this.#offset - start) : data;
    this.#offset = start + data.length;
    // ASCII needs no decoder (and StringDecoder costs ~10 times a plain decode): most terminal output is ASCII.
    if (!this.#partial && isAscii(fresh)) this.#add('o', fresh.toString('latin1'), this.#now(), true);
    else {
      const text = this.#decoder.write(fresh);
      this.#partial = endsInsideCharacter(fresh);
      if (text) this.#add('o', text);
    }
    if (source.paced && this.#pending >= PAUSE_BYTES && !this.#paused) {
      this.#paused = true;
      this.#o.pace(true);
    }
  }

  #missing(start: number): void {
    const tail = this.#decoder.end();
    this.#partial = false;
    if (tail) this.#add('o', tail);
    this.#add('m', `output missing here: ${this.#behind ? 'the recording store fell behind' : 'it was produced while no gateway was recording'}`);
    this.#behind = false;
    this.#offset = start;
  }

  #fallBehind(): void {
    if (!this.#o.required) {
      this.#behind = true;
      return;
    }
    this.#o.log.warn({ recording: this.#o.id }, 'the recording store fell behind the output');
    this.#end('failed');
    this.#o.onFailure(new Error(`the recording store fell more than ${PAUSE_BYTES} bytes behind the output`));
  }

  resize(cols: number, rows: number): void {
    const size = `${cols}x${rows}`;
    // Every stream tells the same resize: one event.
    if (size === this.#size) return;
    this.#size = size;
    this.#add('r', size);
  }

  input(data: string): void {
    if (this.#o.input) this.#add('i', data);
  }

  exited(): void {
    this.#exitSeen = true;
  }

  /** Stores what is pending as the next chunk (after the flush already running, if any). */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#store());
    return this.#flushing;
  }

  async #store(): Promise<void> {
    if (this.#lines.length === 0) {
      if (!this.#ended)
        await this.#o.store
          .renew(this.#o.id, this.#o.writer, this.#o.leaseSeconds)
          .catch(ignoreError('a missed renewal is retried at the next flush; the lease outlives several'));
      return;
    }
    const body = Buffer.concat(this.#lines, this.#pending);
    const chunk = { seq: this.#seq, firstAt: this.#firstAt ?? this.#lastAt, lastAt: this.#lastAt, words: this.#words, offset: this.#offset };
    this.#lines = [];
    this.#pending = 0;
    this.#firstAt = undefined;
    this.#words = '';
    if (this.#paused) {
      this.#paused = false;
      this.#o.pace(false);
    }
    const key = chunkKey(this.#o.id, chunk.seq);
    try {
      const stored = await this.#o.objects.put(key, once(body), { contentType: 'application/jsonl', size: body.length });
      const kept = await this.#o.store.commitChunk({
        id: this.#o.id,
        writer: this.#o.writer,
        seq: chunk.seq,
        firstAt: chunk.firstAt,
        lastAt: chunk.lastAt,
        bytes: stored.size,
        key,
        words: chunk.words,
        outputOffset: chunk.offset,
        leaseSeconds: this.#o.leaseSeconds,
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
    const line = Buffer.from(eventLine(this.#now(), 'm', 'recording stopped: size limit reached (recording.max_bytes)'));
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
    if (!first) return;
    const state = end === 'released' ? 'recording' : end;
    void this.#o.store
      .finish(this.#o.id, this.#o.writer, state)
      .catch(ignoreError('the lease sweep finishes a row this write could not'))
      .then(() => this.#o.onEnd(end));
  }

  /** No stream is left: store the rest; complete when the session's exit was seen, else released (see service.ts). */
  async finish(): Promise<void> {
    const tail = this.#decoder.end();
    if (tail) this.#add('o', tail);
    await this.flush();
    if (!this.#ending) this.#end(this.#exitSeen ? 'complete' : 'released');
  }

  /** It never got a stream (the caller marks the recording failed): stop flushing and renewing the lease. */
  abandon(): void {
    clearInterval(this.#timer);
    this.#ended = true;
    this.#ending = true;
  }

  /** The gateway is shutting down: store what is pending and let another gateway take the recording over. */
  async close(): Promise<void> {
    if (this.#ending) return;
    this.#ended = true;
    await this.flush();
    this.#end('released');
  }
}
