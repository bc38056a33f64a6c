// Joins a client's socket to its session's agent stream. Terminal data passes through as bytes: both hops carry
// the same frames (frames.ts), so a socket read of data frames is written on as it came, without decoding and
// re-encoding each frame (a keystroke's round trip and a flood's CPU were mostly that). Held back and looked at:
// the client's control messages (resize checked and forwarded, ping answered here, others refused with an error),
// the agent's control messages (exit reported on the way; on a recorded stream the recorder's own messages), and
// the WebSocket ping/pong/close frames of each hop, which each hop answers itself. Backpressure both ways: when one
// side has more than HIGH_WATER bytes queued, the other side is not read until that drains, so a slow reader slows
// the shell down instead of growing a buffer; a client that stops answering pings is cut off.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { AgentStream } from '../agent/client.ts';
import { CLOSE_CODES, encodeServerMessage, parseClientControl, type ExitMessage, type ServerMessage } from '../protocol.ts';
import type { RecordingTap } from '../recording/service.ts';
import { closePayload, encodeFrame, FrameError, FrameScanner, OPCODE, parseClose, takeOverSocket, type CollectedFrame, type ScanItem } from './frames.ts';

export const HIGH_WATER = 1_048_576;
/** The largest frame either side may send (the agent's limit too); control messages are far smaller. */
const MAX_FRAME = 1_048_576;
const MAX_CONTROL = 65_536;
/** How long a side has to answer our close frame before its socket is dropped. */
const CLOSE_WAIT_MS = 5000;

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
  /** The client's connection is gone, with the close code the client sent (1006: none). */
  onClosed(code: number): void;
  /** The recorder reading this stream (recording on): output after the client got it, and the agent's messages for it. */
  tap?: RecordingTap;
}

/** What others may do to a relayed connection: end it with a message (access withdrawn), or close it (shutdown). */
export interface Relay {
  end(ending: Ending): void;
  close(code: number, reason: string): void;
}

/** The agent's messages on a stream opened for recording that are for the recorder only (recording/feed.ts). */
const RECORDER_ONLY = new Set(['recording', 'resize', 'input']);

/** Close codes a server may send (1005, 1006 and 1015 are reserved for "none received"). */
const sendable = (code: number) =>
  code === 1000 || code === 1001 || (code >= 1002 && code <= 1014 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

/** One hop: its socket, its frames, and where its closing handshake stands. */
interface Side {
  socket: Duplex;
  scanner: FrameScanner;
  /** Frames we write to it are masked (we are its client: the agent's side). */
  mask: boolean;
  /** We sent our close frame. */
  closeSent: boolean;
  /** Its close frame came, or its socket ended. */
  closeReceived: boolean;
  /** Paused because the other side has too much queued. */
  paused: boolean;
  /** The fragments so far of a text message that came in several frames. */
  fragments: Buffer[];
}

interface Link {
  client: Side;
  agent: Side;
  options: ProxyOptions;
  clientAlive: boolean;
  clientCloseCode: number;
  exitSeen: boolean;
  agentEnded: boolean;
  agentError: Error | undefined;
  heartbeat: NodeJS.Timeout | undefined;
}

const side = (socket: Duplex, mask: boolean): Side => ({
  socket,
  mask,
  scanner: new FrameScanner({
    masked: !mask,
    // The client's binary frames are typed input and the agent's are output: passed on; everything else is looked at.
    action: (opcode, message) => (opcode === OPCODE.binary || (opcode === OPCODE.continuation && message === OPCODE.binary) ? 'forward' : 'collect'),
    maxFrame: MAX_FRAME,
    maxCollected: MAX_CONTROL,
  }),
  closeSent: false,
  closeReceived: false,
  paused: false,
  fragments: [],
});

/** A held-back text message once all of it is there (its frames' payloads joined); undefined until then. */
function wholeText(side: Side, frame: CollectedFrame): Buffer | undefined {
  if (frame.fin && side.fragments.length === 0) return frame.payload;
  side.fragments.push(frame.payload);
  const size = side.fragments.reduce((sum, part) => sum + part.length, 0);
  if (size > MAX_CONTROL) {
    side.fragments = [];
    side.closeReceived = true;
    closeSide(side, 1009, 'message too large');
    return undefined;
  }
  if (!frame.fin) return undefined;
  const whole = Buffer.concat(side.fragments);
  side.fragments = [];
  return whole;
}

export function proxyTerminal(ws: WebSocket, stream: AgentStream, options: ProxyOptions): Relay {
  const link: Link = {
    // The client's socket under `ws` (upgraded by @fastify/websocket, paused, nothing read yet): the relay's now.
    client: side(takeOverSocket(ws), false),
    agent: side(stream.socket, true),
    options,
    clientAlive: true,
    clientCloseCode: 1006,
    exitSeen: false,
    agentEnded: false,
    agentError: undefined,
    heartbeat: undefined,
  };
  const { client, agent } = link;
  if (options.tap) {
    // The output goes to the recorder too.
    agent.scanner = new FrameScanner({
      masked: false,
      action: (opcode, message) => (opcode === OPCODE.binary || (opcode === OPCODE.continuation && message === OPCODE.binary) ? 'tap' : 'collect'),
      maxFrame: MAX_FRAME,
      maxCollected: MAX_CONTROL,
    });
  }
  startHeartbeat(link);

  client.socket.on('data', (chunk: Buffer) => fromClient(link, chunk));
  client.socket.on('error', () => client.socket.destroy());
  client.socket.on('end', () => client.socket.end());
  client.socket.on('close', () => clientGone(link));
  agent.socket.on('data', (chunk: Buffer) => fromAgent(link, chunk));
  agent.socket.on('error', (error) => {
    link.agentError = error;
    agent.socket.destroy();
  });
  agent.socket.on('end', () => agent.socket.end());
  agent.socket.on('close', () => agentGone(link, 1006, ''));

  if (stream.head.length > 0) fromAgent(link, stream.head);
  client.socket.resume();
  agent.socket.resume();
  return {
    end: (ending) => {
      sendText(client, encodeServerMessage(ending.message));
      closeSide(client, ending.code, ending.reason);
    },
    close: (code, reason) => closeSide(client, code, reason),
  };
}

const open = (side: Side) => !side.closeSent && !side.closeReceived && !side.socket.destroyed;

/** Writes to `to`; past HIGH_WATER queued there, `from` is not read until `to` drains. */
function write(to: Side, from: Side, bytes: Buffer): void {
  if (to.socket.destroyed) return;
  to.socket.write(bytes);
  if (to.socket.writableLength > HIGH_WATER && !from.paused) {
    from.paused = true;
    from.socket.pause();
    to.socket.once('drain', () => {
      from.paused = false;
      from.socket.resume();
    });
  }
}

const sendFrame = (side: Side, opcode: number, payload: Buffer) => {
  if (!side.socket.destroyed) side.socket.write(encodeFrame(opcode, payload, side.mask));
};
const sendText = (side: Side, text: string) => {
  if (open(side)) sendFrame(side, OPCODE.text, Buffer.from(text));
};

/** Starts our closing handshake with one side: its socket is dropped if it does not answer in time. */
function closeSide(side: Side, code: number, reason: string): void {
  if (side.closeSent || side.socket.destroyed) return;
  side.closeSent = true;
  sendFrame(side, OPCODE.close, closePayload(code, reason));
  // Read again, or its answer to our close frame would never be seen.
  if (side.paused) side.socket.resume();
  if (side.closeReceived) side.socket.end();
  setTimeout(() => side.socket.destroy(), CLOSE_WAIT_MS).unref();
}

function scan(side: Side, chunk: Buffer): ScanItem[] | undefined {
  try {
    return side.scanner.scan(chunk);
  } catch (error) {
    if (!(error instanceof FrameError)) throw error;
    side.closeReceived = true; // nothing more is read from it
    closeSide(side, error.code, error.message);
    return undefined;
  }
}

function fromClient(link: Link, chunk: Buffer): void {
  const { client, agent } = link;
  link.clientAlive = true;
  if (client.closeReceived) return;
  const items = scan(client, chunk);
  if (!items) return;
  for (const item of items) {
    if ('forward' in item) {
      if (open(client) && open(agent)) write(agent, client, item.forward);
    } else if ('frame' in item) clientFrame(link, item.frame);
  }
}

function clientFrame(link: Link, frame: CollectedFrame): void {
  const { client, agent } = link;
  if (frame.opcode === OPCODE.close) {
    const { code } = parseClose(frame.payload);
    link.clientCloseCode = code;
    client.closeReceived = true;
    if (!client.closeSent) {
      client.closeSent = true;
      sendFrame(client, OPCODE.close, code === 1005 || !sendable(code) ? Buffer.alloc(0) : frame.payload.subarray(0, 2));
    }
    client.socket.end();
    return;
  }
  if (frame.opcode === OPCODE.ping) return sendFrame(client, OPCODE.pong, frame.payload);
  if (frame.opcode === OPCODE.pong || !open(client)) return;
  const text = wholeText(client, frame);
  if (!text) return;
  const parsed = parseClientControl(text.toString('utf8'));
  if (!parsed.ok) return sendText(client, encodeServerMessage({ type: 'error', message: parsed.error }));
  const message = parsed.message;
  if (message.type === 'ping') sendText(client, encodeServerMessage({ type: 'pong' }));
  else if (message.type === 'resize' && open(agent)) {
    write(agent, client, encodeFrame(OPCODE.text, Buffer.from(JSON.stringify(message)), true));
    link.options.onResize?.(message.cols, message.rows);
  }
}

function fromAgent(link: Link, chunk: Buffer): void {
  const { client, agent } = link;
  if (agent.closeReceived) return;
  const items = scan(agent, chunk);
  if (!items) return agentGone(link, 1006, '');
  const { tap } = link.options;
  for (const item of items) {
    if ('forward' in item) {
      if (open(client)) write(client, agent, item.forward);
    } else if ('tapped' in item) tap?.output(item.tapped);
    else agentFrame(link, item.frame);
  }
}

function agentFrame(link: Link, frame: CollectedFrame): void {
  const { client, agent } = link;
  if (frame.opcode === OPCODE.close) {
    agent.closeReceived = true;
    if (!agent.closeSent) {
      agent.closeSent = true;
      sendFrame(agent, OPCODE.close, frame.payload.subarray(0, 2));
    }
    agent.socket.end();
    const { code, reason } = parseClose(frame.payload);
    return agentGone(link, code, reason);
  }
  if (frame.opcode === OPCODE.ping) return sendFrame(agent, OPCODE.pong, frame.payload);
  if (frame.opcode === OPCODE.pong) return;
  const whole = wholeText(agent, frame);
  if (!whole) return;
  const text = whole.toString('utf8');
  const { tap } = link.options;
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
  sendText(client, text);
}

function startHeartbeat(link: Link): void {
  const { client } = link;
  link.heartbeat = setInterval(() => {
    if (!link.clientAlive) {
      closeSide(client, CLOSE_CODES.heartbeatTimeout, 'no pong');
      setTimeout(() => client.socket.destroy(), 1000).unref();
      return;
    }
    link.clientAlive = false;
    if (open(client)) sendFrame(client, OPCODE.ping, Buffer.alloc(0));
  }, link.options.heartbeatMs);
  link.heartbeat.unref();
}

/** The client's connection closed: the agent stream goes too. */
function clientGone(link: Link): void {
  clearInterval(link.heartbeat);
  const { agent } = link;
  if (open(agent)) {
    closeSide(agent, 1000, 'client left');
    agent.socket.end();
  } else if (!agent.closeSent) agent.socket.destroy();
  link.options.onClosed(link.clientCloseCode);
}

/** The agent stream ended (close frame `code`, or 1006 without one): the client hears how, once. */
function agentGone(link: Link, code: number, reason: string): void {
  if (link.agentEnded) return;
  link.agentEnded = true;
  link.options.tap?.close();
  const { client } = link;
  clearInterval(link.heartbeat);
  if (!open(client)) return;
  if (link.exitSeen && sendable(code)) return closeSide(client, code, reason);
  // The agent went away without an exit message (process killed, pod deleted, network), or never answered:
  // the caller knows whether the session has ended meanwhile (then the client gets its exit) or not.
  void link.options
    .onUpstreamLost({ wasOpen: true, error: link.agentError })
    .catch(
      (): Ending => ({
        message: { type: 'error', message: 'Lost the connection to the terminal' },
        code: CLOSE_CODES.agentUnavailable,
        reason: 'agent connection lost',
      }),
    )
    .then((ending) => {
      sendText(client, encodeServerMessage(ending.message));
      closeSide(client, ending.code, ending.reason);
    });
}
