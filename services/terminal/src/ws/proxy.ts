// Joins a client's socket to its session's agent socket. Terminal data passes through untouched; the client's
// control messages are checked (resize forwarded, ping answered here); the agent's control messages (exit,
// error) are forwarded and exits reported. Backpressure both ways: when one side has more than HIGH_WATER
// bytes queued, the other side stops being read until it drains below LOW_WATER, so a slow reader slows the
// shell down instead of growing a buffer; a reader that stops answering pings is cut off.
import type { WebSocket } from 'ws';
import { CLOSE_CODES, encodeServerMessage, parseClientControl, type ExitMessage, type ServerMessage } from '../protocol.ts';
import type { RecordingTap } from '../recording/service.ts';

export const HIGH_WATER = 1_048_576;
export const LOW_WATER = 262_144;

export interface Ending {
  message: ServerMessage;
  code: number;
  reason: string;
}

export interface ProxyOptions {
  heartbeatMs: number;
  onExit(message: ExitMessage): void;
  /** A resize the client sent on (for the audit log). */
  onResize?(cols: number, rows: number): void;
  onUpstreamLost(event: { wasOpen: boolean; error: Error | undefined }): Promise<Ending>;
  /** The recorder reading this stream (recording on): output after the client got it, and the agent's messages for it. */
  tap?: RecordingTap;
}

/** The agent's messages on a stream opened for recording that are for the recorder only (recording/feed.ts). */
const RECORDER_ONLY = new Set(['recording', 'resize', 'input']);

/** Close codes a server may send (1005, 1006 and 1015 are reserved for "none received"). */
const sendable = (code: number) =>
  code === 1000 || code === 1001 || (code >= 1002 && code <= 1014 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

const OPEN = 1;

/** What the two directions share: bytes queued on each side, who is paused, and what has been seen. */
interface Link {
  client: WebSocket;
  upstream: WebSocket;
  options: ProxyOptions;
  clientQueued: number;
  upstreamQueued: number;
  upstreamPaused: boolean;
  clientPaused: boolean;
  upstreamOpen: boolean;
  clientAlive: boolean;
  exitSeen: boolean;
  upstreamError: Error | undefined;
  heartbeat: NodeJS.Timeout | undefined;
}

export function proxyTerminal(client: WebSocket, upstream: WebSocket, options: ProxyOptions): void {
  const link: Link = {
    client,
    upstream,
    options,
    clientQueued: 0,
    upstreamQueued: 0,
    upstreamPaused: false,
    clientPaused: false,
    upstreamOpen: false,
    clientAlive: true,
    exitSeen: false,
    upstreamError: undefined,
    heartbeat: undefined,
  };

  // Nothing from the client is read until the agent's socket is open (it stays in the kernel's buffers).
  client.pause();

  startHeartbeat(link);
  client.on('pong', () => (link.clientAlive = true));

  upstream.on('open', () => {
    link.upstreamOpen = true;
    if (!link.clientPaused) client.resume();
  });
  upstream.on('message', (data, isBinary) => relayAgentMessage(link, toBuffer(data), isBinary));
  client.on('message', (data, isBinary) => relayClientMessage(link, data, isBinary));

  client.on('close', () => {
    clearInterval(link.heartbeat);
    if (upstream.readyState === OPEN) upstream.close(1000, 'client left');
    else upstream.terminate();
  });
  client.on('error', () => client.terminate());

  upstream.on('error', (error) => {
    link.upstreamError = error;
  });
  upstream.on('close', (code, reason) => {
    options.tap?.close();
    endClient(link, code, reason);
  });
}

const toBuffer = (data: Buffer | ArrayBuffer | Buffer[]): Buffer =>
  Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);

function sendToClient(link: Link, data: Buffer): void {
  link.clientQueued += data.length;
  link.client.send(data, { binary: true }, () => {
    link.clientQueued -= data.length;
    if (link.upstreamPaused && link.clientQueued < LOW_WATER) {
      link.upstreamPaused = false;
      link.upstream.resume();
    }
  });
  if (link.clientQueued > HIGH_WATER && !link.upstreamPaused) {
    link.upstreamPaused = true;
    link.upstream.pause();
  }
}

function sendToUpstream(link: Link, data: Buffer | string, binary: boolean): void {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  link.upstreamQueued += size;
  link.upstream.send(data, { binary }, () => {
    link.upstreamQueued -= size;
    if (link.clientPaused && link.upstreamQueued < LOW_WATER) {
      link.clientPaused = false;
      link.client.resume();
    }
  });
  if (link.upstreamQueued > HIGH_WATER && !link.clientPaused) {
    link.clientPaused = true;
    link.client.pause();
  }
}

function startHeartbeat(link: Link): void {
  const { client } = link;
  link.heartbeat = setInterval(() => {
    if (!link.clientAlive) {
      client.close(CLOSE_CODES.heartbeatTimeout, 'no pong');
      setTimeout(() => client.terminate(), 1000).unref();
      return;
    }
    link.clientAlive = false;
    if (client.readyState === OPEN) client.ping();
  }, link.options.heartbeatMs);
  link.heartbeat.unref();
}

/** Terminal data goes through; control messages too, and an exit is reported on the way. */
function relayAgentMessage(link: Link, buffer: Buffer, isBinary: boolean): void {
  const { tap } = link.options;
  if (isBinary) {
    sendToClient(link, buffer);
    tap?.output(buffer);
    return;
  }
  const text = buffer.toString('utf8');
  try {
    const message = JSON.parse(text) as { type?: string };
    if (tap && RECORDER_ONLY.has(message.type ?? '')) return tap.control(message);
    if (message.type === 'exit') {
      link.exitSeen = true;
      tap?.control(message);
      link.options.onExit(message as ExitMessage);
    }
  } catch {
    // not ours to judge: forward as is
  }
  if (link.client.readyState === OPEN) link.client.send(text);
}

function relayClientMessage(link: Link, data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
  const { client, upstream } = link;
  if (!link.upstreamOpen || upstream.readyState !== OPEN) return;
  const buffer = toBuffer(data);
  link.clientAlive = true;
  if (isBinary) return sendToUpstream(link, buffer, true);
  const parsed = parseClientControl(buffer.toString('utf8'));
  if (!parsed.ok) {
    client.send(encodeServerMessage({ type: 'error', message: parsed.error }));
    return;
  }
  const message = parsed.message;
  if (message.type === 'ping') client.send(encodeServerMessage({ type: 'pong' }));
  else if (message.type === 'resize') {
    sendToUpstream(link, JSON.stringify(message), false);
    link.options.onResize?.(message.cols, message.rows);
  }
}

function endClient(link: Link, code: number, reason: Buffer): void {
  const { client } = link;
  clearInterval(link.heartbeat);
  if (client.readyState !== OPEN) return;
  // Read again, or the client's answer to our close frame would never be seen.
  client.resume();
  if (link.exitSeen && sendable(code)) {
    client.close(code, reason.toString());
    return;
  }
  // The agent went away without an exit message (process killed, pod deleted, network), or never answered:
  // the caller knows whether the session has ended meanwhile (then the client gets its exit) or not.
  void link.options
    .onUpstreamLost({ wasOpen: link.upstreamOpen, error: link.upstreamError })
    .catch(
      (): Ending => ({
        message: { type: 'error', message: 'Lost the connection to the terminal' },
        code: CLOSE_CODES.agentUnavailable,
        reason: 'agent connection lost',
      }),
    )
    .then((ending) => {
      if (client.readyState !== OPEN) return;
      client.send(encodeServerMessage(ending.message));
      client.close(ending.code, ending.reason);
    });
}
