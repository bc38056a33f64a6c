// Joins a client's socket to its session's agent socket. Terminal data passes through untouched; the client's
// control messages are checked (resize forwarded, ping answered here); the agent's control messages (exit,
// error) are forwarded and exits reported. Backpressure both ways: when one side has more than HIGH_WATER
// bytes queued, the other side stops being read until it drains below LOW_WATER, so a slow reader slows the
// shell down instead of growing a buffer; a reader that stops answering pings is cut off.
import type { WebSocket } from 'ws';
import { CLOSE_CODES, encodeServerMessage, parseClientControl, type ExitMessage, type ServerMessage } from '../protocol.ts';

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
  onUpstreamLost(event: { wasOpen: boolean; error: Error | undefined }): Promise<Ending>;
}

/** Close codes a server may send (1005, 1006 and 1015 are reserved for "none received"). */
const sendable = (code: number) => code === 1000 || code === 1001 || (code >= 1002 && code <= 1014 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

const OPEN = 1;

export function proxyTerminal(client: WebSocket, upstream: WebSocket, options: ProxyOptions): void {
  let clientQueued = 0;
  let upstreamQueued = 0;
  let upstreamPaused = false;
  let clientPaused = false;
  let upstreamOpen = false;
  let clientAlive = true;
  let exitSeen = false;

  // Nothing from the client is read until the agent's socket is open (it stays in the kernel's buffers).
  client.pause();

  const toClient = (data: Buffer) => {
    clientQueued += data.length;
    client.send(data, { binary: true }, () => {
      clientQueued -= data.length;
      if (upstreamPaused && clientQueued < LOW_WATER) {
        upstreamPaused = false;
        upstream.resume();
      }
    });
    if (clientQueued > HIGH_WATER && !upstreamPaused) {
      upstreamPaused = true;
      upstream.pause();
    }
  };

  const toUpstream = (data: Buffer | string, binary: boolean) => {
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    upstreamQueued += size;
    upstream.send(data, { binary }, () => {
      upstreamQueued -= size;
      if (clientPaused && upstreamQueued < LOW_WATER) {
        clientPaused = false;
        client.resume();
      }
    });
    if (upstreamQueued > HIGH_WATER && !clientPaused) {
      clientPaused = true;
      client.pause();
    }
  };

  const heartbeat = setInterval(() => {
    if (!clientAlive) {
      client.close(CLOSE_CODES.heartbeatTimeout, 'no pong');
      setTimeout(() => client.terminate(), 1000).unref();
      return;
    }
    clientAlive = false;
    if (client.readyState === OPEN) client.ping();
  }, options.heartbeatMs);
  heartbeat.unref();
  client.on('pong', () => (clientAlive = true));

  upstream.on('open', () => {
    upstreamOpen = true;
    if (!clientPaused) client.resume();
  });

  upstream.on('message', (data, isBinary) => {
    const buffer = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (isBinary) return toClient(buffer);
    const text = buffer.toString('utf8');
    try {
      const message = JSON.parse(text) as { type?: string };
      if (message.type === 'exit') {
        exitSeen = true;
        options.onExit(message as ExitMessage);
      }
    } catch {
      // not ours to judge: forward as is
    }
    if (client.readyState === OPEN) client.send(text);
  });

  client.on('message', (data, isBinary) => {
    if (!upstreamOpen || upstream.readyState !== OPEN) return;
    const buffer = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    clientAlive = true;
    if (isBinary) return toUpstream(buffer, true);
    const parsed = parseClientControl(buffer.toString('utf8'));
    if (!parsed.ok) {
      client.send(encodeServerMessage({ type: 'error', message: parsed.error }));
      return;
    }
    const message = parsed.message;
    if (message.type === 'ping') client.send(encodeServerMessage({ type: 'pong' }));
    else if (message.type === 'resize') toUpstream(JSON.stringify(message), false);
  });

  const cleanUp = () => clearInterval(heartbeat);

  client.on('close', () => {
    cleanUp();
    if (upstream.readyState === OPEN) upstream.close(1000, 'client left');
    else upstream.terminate();
  });
  client.on('error', () => client.terminate());

  let upstreamError: Error | undefined;
  upstream.on('error', (error) => {
    upstreamError = error;
  });
  upstream.on('close', (code, reason) => {
    cleanUp();
    if (client.readyState !== OPEN) return;
    // Read again, or the client's answer to our close frame would never be seen.
    client.resume();
    if (exitSeen && sendable(code)) {
      client.close(code, reason.toString());
      return;
    }
    // The agent went away without an exit message (process killed, pod deleted, network), or never answered:
    // the caller knows whether the session has ended meanwhile (then the client gets its exit) or not.
    void options
      .onUpstreamLost({ wasOpen: upstreamOpen, error: upstreamError })
      .catch((): Ending => ({ message: { type: 'error', message: 'Lost the connection to the terminal' }, code: CLOSE_CODES.agentUnavailable, reason: 'agent connection lost' }))
      .then((ending) => {
        if (client.readyState !== OPEN) return;
        client.send(encodeServerMessage(ending.message));
        client.close(ending.code, ending.reason);
      });
  });
}
