// Where a recording's output comes from. While a user's socket is attached to the session through this gateway,
// from that very stream (a tap in the proxy: the agent sends and the gateway receives everything once); while
// none is, from the agent's observer stream (agent/shell-session.ts observe), which also brings what was made
// while nobody was attached, from the scrollback. Switching: the observer is opened at the recorder's offset
// when the last tap goes, and closed once a tap carries on from where the recorder stands; the recorder skips
// bytes it already has, so the overlap records nothing twice.
import type { WebSocket } from 'ws';
import type { OutputSource, Recorder } from './recorder.ts';

/** A control message the agent sends to a recording stream. */
export interface RecordingControl {
  type?: string;
  offset?: number;
  cols?: number;
  rows?: number;
  data?: string;
}

/** One user stream through this gateway, as the recorder sees it. */
export interface TapState {
  /** Output offset of the next byte on the stream; undefined until the agent said where it starts. */
  offset: number | undefined;
}

interface Observer {
  socket: WebSocket;
  offset: number | undefined;
  retired: boolean;
}

export class Feed {
  readonly #recorder: Recorder;
  /** Live taps of this session on this gateway (shared with the service, which keeps them while no recorder runs). */
  readonly #taps: Set<TapState>;
  readonly #openObserver: (from: number) => Promise<WebSocket>;
  readonly #log: { warn(object: object, message: string): void };
  #observer: Observer | undefined;
  #opening = false;
  #stopped = false;

  constructor(
    recorder: Recorder,
    taps: Set<TapState>,
    openObserver: (from: number) => Promise<WebSocket>,
    log: { warn(object: object, message: string): void },
  ) {
    this.#recorder = recorder;
    this.#taps = taps;
    this.#openObserver = openObserver;
    this.#log = log;
  }

  /** Opens the observer stream at the recorder's offset; resolves once it is open. */
  async observe(): Promise<void> {
    if (this.#stopped || this.#observer || this.#opening) return;
    this.#opening = true;
    let socket: WebSocket;
    try {
      socket = await this.#openObserver(this.#recorder.offset);
    } finally {
      this.#opening = false;
    }
    const observer: Observer = { socket, offset: undefined, retired: false };
    this.#observer = observer;
    // Listening from the start: the agent's first frames may come in the same read as the upgrade's answer.
    socket.on('message', (data: Buffer, isBinary: boolean) =>
      isBinary ? this.#observed(observer, data) : this.#observerControl(observer, data.toString('utf8')),
    );
    socket.on('error', () => socket.terminate());
    socket.on('close', () => this.#observerClosed(observer));
    if (this.#stopped) socket.close(1000, 'recording ended');
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
  }

  #observed(observer: Observer, data: Buffer): void {
    if (observer.offset === undefined || observer.retired) return;
    const start = observer.offset;
    observer.offset += data.length;
    this.#recorder.output(start, data, { paced: true, mayGap: true });
    this.#retireObserverIfCovered();
  }

  #observerControl(observer: Observer, text: string): void {
    const message = parse(text);
    if (!message || observer.retired) return;
    if (message.type === 'recording') observer.offset = message.offset ?? 0;
    // Resizes and input come on every recording stream: the observer's count only while no tap brings them.
    this.control(message, this.#taps.size === 0);
  }

  #observerClosed(observer: Observer): void {
    if (this.#observer === observer) this.#observer = undefined;
    if (observer.retired || this.#stopped) return;
    if (this.#taps.size === 0) void this.#finish();
  }

  /** A tap is live, or gone: the output it would bring. */
  tapOutput(tap: TapState, start: number, data: Buffer): void {
    if (this.#stopped) return;
    const source: OutputSource = { paced: false, mayGap: !this.#observer && !this.#opening };
    this.#recorder.output(start, data, source);
    this.#retireObserverIfCovered();
  }

  /** A control message from a recording stream; `primary`: the stream whose input and resizes count. */
  control(message: RecordingControl, primary: boolean): void {
    if (this.#stopped) return;
    if ((message.type === 'recording' || message.type === 'resize') && message.cols && message.rows) this.#recorder.resize(message.cols, message.rows);
    else if (message.type === 'input' && primary && typeof message.data === 'string') this.#recorder.input(message.data);
    else if (message.type === 'exit') this.#recorder.exited();
  }

  /** The last tap went away: the session goes on, so the observer brings what comes next (from the scrollback). */
  tapsGone(): void {
    if (this.#stopped || this.#observer || this.#opening) return;
    if (this.#recorder.exitSeen) {
      void this.#finish();
      return;
    }
    this.observe().catch((error: unknown) => {
      this.#log.warn({ err: error }, 'could not open the recording stream');
      void this.#finish();
    });
  }

  /** The observer is not needed once a live tap continues exactly where the recorder stands. */
  #retireObserverIfCovered(): void {
    const observer = this.#observer;
    if (!observer || observer.offset === undefined) return;
    for (const tap of this.#taps) {
      if (tap.offset !== undefined && tap.offset <= this.#recorder.offset) {
        observer.retired = true;
        this.#observer = undefined;
        observer.socket.close(1000, 'recording from the user stream');
        return;
      }
    }
  }

  async #finish(): Promise<void> {
    if (this.#stopped) return;
    await this.#recorder.finish();
  }

  /** The recorder ended: no more streams. */
  stop(): void {
    this.#stopped = true;
    const observer = this.#observer;
    this.#observer = undefined;
    if (observer && observer.socket.readyState === observer.socket.OPEN) observer.socket.close(1000, 'recording ended');
  }

  pace(paused: boolean): void {
    const socket = this.#observer?.socket;
    if (!socket) return;
    if (paused) socket.pause();
    else socket.resume();
  }
}

export function parse(text: string): RecordingControl | undefined {
  try {
    const message = JSON.parse(text) as unknown;
    return message && typeof message === 'object' ? (message as RecordingControl) : undefined;
  } catch {
    return undefined;
  }
}
