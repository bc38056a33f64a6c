// One shell's session as the agent serves it: the scrollback, the attached sockets, activity and exit state, the
// limits it was started with, and its end (told to every socket, then the agent's own `ended`).
import type { PeerSocket } from './framed-socket.ts';
import { closeCodeFor, encodeServerMessage, parseClientControl, type ExitMessage, type ExitReason } from '../protocol.ts';
import type { AgentStatus } from './agent.ts';
import { expiryReason } from './expiry.ts';
import { OutputFanout, type Peer } from './output-fanout.ts';
import { Scrollback } from './scrollback.ts';
import type { AgentSettings } from './settings.ts';
import { killSessionProcesses, type Shell } from './shell-process.ts';

const PING_INTERVAL_MS = 30_000;
const TICK_MS = 5000;

export class ShellSession {
  readonly #settings: AgentSettings;
  readonly #shell: Shell;
  readonly #shellPid: number;
  readonly #log: (message: string) => void;
  readonly #ended: (code: number) => void;
  readonly #scrollback: Scrollback;
  readonly #output: OutputFanout;
  readonly #startedAt = Date.now();
  #lastActivityAt = this.#startedAt;
  #detachedSince: number | null = this.#startedAt;
  #cols: number;
  #rows: number;
  #exit: ExitMessage | undefined;
  #endReason: ExitReason | undefined;
  readonly #ticker: NodeJS.Timeout;
  /** Sockets the gateway's recorder reads (observers, and users' streams opened with `record`): told of resizes. */
  readonly #recorders = new Set<PeerSocket>();
  /** Those of them that asked for what is typed, too. */
  readonly #inputRecorders = new Set<PeerSocket>();
  #ticks = 0;

  /** `ended`: called once the sockets have had their close frames, with the shell's exit status. */
  constructor(settings: AgentSettings, shell: Shell, log: (message: string) => void, ended: (code: number) => void) {
    this.#settings = settings;
    this.#shell = shell;
    this.#shellPid = shell.term.pid;
    this.#log = log;
    this.#ended = ended;
    this.#cols = settings.BOXYARD_AGENT_COLS;
    this.#rows = settings.BOXYARD_AGENT_ROWS;
    this.#scrollback = new Scrollback(settings.BOXYARD_AGENT_SCROLLBACK_BYTES);
    this.#output = new OutputFanout(shell.term);
    shell.output.sink = (data, length) => {
      this.#scrollback.push(data, length);
      this.#output.push(data, length);
    };
    shell.term.onExit(({ exitCode, signal }) => {
      // Output still in flight from the pty is delivered before the exit message.
      setTimeout(() => {
        const code = signal ? 128 + signal : exitCode;
        this.#finish({ type: 'exit', code, signal: signal || null, reason: this.#endReason ?? 'exited' });
      }, 50);
    });
    // Backstop for an agent whose gateway is gone: the limits it was started with still apply.
    this.#ticker = setInterval(() => this.#tick(), TICK_MS);
    this.#ticker.unref();
  }

  status(): AgentStatus {
    return {
      session_id: this.#settings.BOXYARD_AGENT_SESSION_ID,
      pid: process.pid,
      started_at: this.#startedAt,
      last_activity_at: this.#lastActivityAt,
      attached: this.#output.peers.size,
      detached_since: this.#detachedSince,
      expires_at: this.#settings.BOXYARD_AGENT_EXPIRES_AT,
      exited: this.#exit !== undefined,
      exit_code: this.#exit?.code ?? null,
      now: Date.now(),
      cols: this.#cols,
      rows: this.#rows,
    };
  }

  terminate(reason: ExitReason): void {
    if (this.#exit || this.#endReason) return;
    this.#endReason = reason;
    this.#log(`terminating the shell: ${reason}`);
    try {
      this.#shell.term.kill('SIGHUP');
    } catch {
      // already gone
    }
    // A shell that ignores SIGHUP gets SIGKILL.
    setTimeout(() => {
      if (!this.#exit) {
        try {
          process.kill(this.#shellPid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }, 3000).unref();
  }

  /**
   * A socket the gateway attached: the scrollback, then the live output; its input and resizes go to the shell.
   * With `record`, the gateway's recorder reads this stream too (one stream instead of a second observer): it is
   * first told the output offset the scrollback replay starts at, and later of resizes (and typed input).
   */
  attach(socket: PeerSocket, record?: { input: boolean }): void {
    const peer: Peer = { socket, queued: 0, alive: true };
    this.#lastActivityAt = Date.now();
    socket.on('pong', () => (peer.alive = true));
    socket.on('error', () => socket.terminate());
    // Replay and joining the live stream happen in the same tick: nothing is lost or doubled in between
    // (output not yet sent to the other sockets is already in the scrollback: send it to them first).
    this.#output.flush();
    const replay = this.#scrollback.snapshot();
    const exit = this.#exit;
    if (record) {
      socket.send(JSON.stringify({ type: 'recording', offset: this.#scrollback.total - replay.length, gap: false, cols: this.#cols, rows: this.#rows }));
      if (!exit) this.#addRecorder(socket, record.input);
    }
    if (exit) {
      if (replay.length > 0) socket.send(replay, { binary: true });
      socket.send(encodeServerMessage(exit));
      socket.close(closeCodeFor(exit.reason, exit.code), exit.reason);
      return;
    }
    const peers = this.#output.peers;
    peers.add(peer);
    this.#detachedSince = null;
    if (replay.length > 0) this.#output.send(peer, replay);
    socket.on('message', (data, isBinary) => this.#received(socket, data, isBinary));
    socket.on('close', () => {
      peers.delete(peer);
      if (peers.size === 0) this.#detachedSince = Date.now();
      this.#output.resumeIfDrained();
    });
  }

  /**
   * The gateway's recorder: output from absolute offset `from` (what it has not recorded yet, as far as the
   * scrollback still holds it), then live output, resizes, and with `input` what was typed. It does not count as
   * an attached user (idle time-out and reattach grace still apply) and cannot type.
   */
  observe(socket: PeerSocket, from: number, input: boolean): void {
    const peer: Peer = { socket, queued: 0, alive: true };
    socket.on('pong', () => (peer.alive = true));
    socket.on('error', () => socket.terminate());
    this.#output.flush();
    const { data, gap } = this.#scrollback.since(from);
    const start = this.#scrollback.total - data.length;
    socket.send(JSON.stringify({ type: 'recording', offset: start, gap, cols: this.#cols, rows: this.#rows }));
    if (this.#exit) {
      if (data.length > 0) socket.send(data, { binary: true });
      socket.send(encodeServerMessage(this.#exit));
      socket.close(closeCodeFor(this.#exit.reason, this.#exit.code), this.#exit.reason);
      return;
    }
    const observers = this.#output.observers;
    observers.add(peer);
    this.#addRecorder(socket, input);
    if (data.length > 0) this.#output.send(peer, data);
    socket.on('close', () => {
      observers.delete(peer);
      this.#output.resumeIfDrained();
    });
  }

  #addRecorder(socket: PeerSocket, input: boolean): void {
    this.#recorders.add(socket);
    if (input) this.#inputRecorders.add(socket);
    socket.on('close', () => {
      this.#recorders.delete(socket);
      this.#inputRecorders.delete(socket);
    });
  }

  /** Tells the recorders (resizes, and typed input to those that asked). */
  #tellRecorders(message: Record<string, unknown>, inputOnly = false): void {
    const targets = inputOnly ? this.#inputRecorders : this.#recorders;
    if (targets.size === 0) return;
    // Output read before this message goes out first, so a recording keeps the order the user saw.
    this.#output.flush();
    const text = JSON.stringify(message);
    for (const socket of targets) socket.send(text);
  }

  /** A frame from an attached socket: input when binary, else a control message. */
  #received(socket: PeerSocket, data: Buffer, isBinary: boolean): void {
    if (this.#exit) return;
    if (isBinary) {
      this.#lastActivityAt = Date.now();
      const bytes = data;
      this.#shell.input.write(bytes);
      if (this.#inputRecorders.size > 0) this.#tellRecorders({ type: 'input', data: bytes.toString('utf8') }, true);
      return;
    }
    const parsed = parseClientControl(data.toString());
    if (!parsed.ok) {
      socket.send(encodeServerMessage({ type: 'error', message: parsed.error }));
      return;
    }
    const message = parsed.message;
    if (message.type === 'resize') {
      this.#lastActivityAt = Date.now();
      this.#cols = message.cols;
      this.#rows = message.rows;
      this.#shell.term.resize(this.#cols, this.#rows);
      this.#tellRecorders({ type: 'resize', cols: this.#cols, rows: this.#rows });
    } else if (message.type === 'ping') {
      socket.send(encodeServerMessage({ type: 'pong' }));
    }
  }

  #finish(message: ExitMessage): void {
    const peers = this.#output.peers;
    this.#output.flush();
    this.#shell.input.dispose();
    this.#exit = message;
    const code = closeCodeFor(message.reason, message.code);
    const everyone = [...peers, ...this.#output.observers];
    for (const peer of everyone) {
      peer.socket.send(encodeServerMessage(message));
      peer.socket.close(code, message.reason);
    }
    killSessionProcesses(this.#shellPid);
    // Let the close frames go out, then stop.
    setTimeout(
      () => {
        for (const peer of everyone) peer.socket.terminate();
        clearInterval(this.#ticker);
        this.#ended(message.code ?? 1);
      },
      everyone.length > 0 ? 500 : 0,
    ).unref();
  }

  #tick(): void {
    const reason = expiryReason(
      {
        now: Date.now(),
        expiresAt: this.#settings.BOXYARD_AGENT_EXPIRES_AT,
        lastActivityAt: this.#lastActivityAt,
        attached: this.#output.peers.size,
        detachedSince: this.#detachedSince,
      },
      { idleTimeoutMs: this.#settings.BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS * 1000, reattachGraceMs: this.#settings.BOXYARD_AGENT_REATTACH_GRACE_SECONDS * 1000 },
    );
    if (reason) this.terminate(reason);
    if (++this.#ticks % Math.round(PING_INTERVAL_MS / TICK_MS) !== 0) return;
    // A peer that didn't answer the previous ping is gone (half-open connection).
    for (const peer of this.#output.peers) {
      if (!peer.alive) {
        peer.socket.terminate();
        continue;
      }
      peer.alive = false;
      peer.socket.ping();
    }
  }
}
