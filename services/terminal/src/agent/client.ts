// The gateway's side of the agent API. An agent address is `unix:/path/to.sock` (local backend) or
// `host:port` (a session pod's IP and agent port).
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type RequestOptions } from 'node:http';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import type { ExitReason } from '../protocol.ts';
import type { AgentStatus } from './agent.ts';
import {
  agentProof,
  CHALLENGE_HEADER,
  CHALLENGE_PATH,
  CHALLENGE_SIGNATURE_HEADER,
  challengeSignature,
  gatewayAuthorization,
  isNonce,
  newNonce,
  proofMatches,
  type GatewayKeys,
  type SignedChallenge,
} from './handshake.ts';
import { withTraceparent } from './tracing.ts';

const MAX_FRAME = 1_048_576;

function target(address: string): { http: RequestOptions; ws: string } {
  if (address.startsWith('unix:')) {
    const path = address.slice('unix:'.length);
    return { http: { socketPath: path }, ws: `ws+unix://${path}:/attach` };
  }
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  return { http: { host, port }, ws: `ws://${host.includes(':') ? `[${host}]` : host}:${port}/attach` };
}

export class AgentUnreachableError extends Error {
  override name = 'AgentUnreachableError';
}

/** The peer at the session's address did not prove it is the session's agent (an address that changed hands). */
export class NotTheAgentError extends AgentUnreachableError {
  override name = 'NotTheAgentError';
}

/** What the gateway needs to talk to one session's agent. */
export interface AgentCredentials {
  sessionId: string;
  keys: GatewayKeys;
}

/** An agent's answers are small; a peer that sends more is not one. */
const MAX_ANSWER_BYTES = 65_536;

async function call<T>(
  address: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  timeoutMs = 3000,
): Promise<{ status: number; body: T }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        ...target(address).http,
        method,
        path,
        headers: withTraceparent({ ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) }),
        timeout: timeoutMs,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.length > MAX_ANSWER_BYTES) req.destroy(new AgentUnreachableError(`agent at ${address} answered more than ${MAX_ANSWER_BYTES} bytes`));
        });
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : undefined) as T });
          } catch {
            reject(new AgentUnreachableError(`agent at ${address} answered ${res.statusCode} with a non-JSON body`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new AgentUnreachableError(`agent at ${address} did not answer within ${timeoutMs} ms`)));
    req.on('error', (error) => reject(error instanceof AgentUnreachableError ? error : new AgentUnreachableError(`agent at ${address}: ${error.message}`)));
    req.end(payload);
  });
}

/** A challenge the gateway signed now, for a backend to hand its agent through a channel of its own (stdin). */
export function newChallenge(credentials: AgentCredentials): SignedChallenge {
  const nonce = newNonce();
  return { nonce, signature: challengeSignature(credentials.keys, credentials.sessionId, nonce) };
}

/**
 * The Authorization header for one call (`method` `path`), from the peer's answer to the gateway's challenge
 * `gatewayNonce`: only once the answer proves the peer is the session's agent (handshake.ts). Nothing secret goes
 * to a peer that has not.
 */
export function authorizationFrom(
  address: string,
  credentials: AgentCredentials,
  gatewayNonce: string,
  answer: { nonce?: unknown; proof?: unknown } | undefined,
  method: string,
  path: string,
): string {
  const agentNonce = answer?.nonce;
  if (!isNonce(agentNonce) || !proofMatches(agentProof(credentials.keys.agentKey, credentials.sessionId, gatewayNonce, agentNonce), answer?.proof)) {
    throw new NotTheAgentError(`the peer at ${address} is not the agent of session ${credentials.sessionId} (no valid proof)`);
  }
  return gatewayAuthorization(credentials.keys, credentials.sessionId, agentNonce, gatewayNonce, method, path);
}

/** The Authorization header for one call to the session's agent, after a challenge of the peer at `address`. */
async function authorize(address: string, credentials: AgentCredentials, method: string, path: string): Promise<string> {
  const challenge = newChallenge(credentials);
  const { status, body } = await call<{ nonce?: unknown; proof?: unknown } | undefined>(address, 'POST', CHALLENGE_PATH, {
    [CHALLENGE_HEADER]: challenge.nonce,
    [CHALLENGE_SIGNATURE_HEADER]: challenge.signature,
  });
  return authorizationFrom(address, credentials, challenge.nonce, status === 200 ? body : undefined, method, path);
}

async function authorizedCall<T>(address: string, credentials: AgentCredentials, method: string, path: string, body?: unknown) {
  return call<T>(address, method, path, { authorization: await authorize(address, credentials, method, path) }, body);
}

export async function agentStatus(address: string, credentials: AgentCredentials): Promise<AgentStatus> {
  const { status, body } = await authorizedCall<AgentStatus>(address, credentials, 'GET', '/status');
  if (status !== 200) throw new AgentUnreachableError(`agent at ${address} answered ${status} to /status`);
  return body;
}

export async function terminateAgent(address: string, credentials: AgentCredentials, reason: ExitReason): Promise<void> {
  const { status } = await authorizedCall(address, credentials, 'POST', '/terminate', { reason });
  if (status !== 202) throw new AgentUnreachableError(`agent at ${address} answered ${status} to /terminate`);
}

/** Resolves when the agent answers /healthz, or rejects after `timeoutMs`. */
export async function waitForAgent(address: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const { status } = await call(address, 'GET', '/healthz', {}, undefined, 2000);
      if (status === 200) return;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new AgentUnreachableError(`agent at ${address} not ready within ${timeoutMs} ms: ${String(last)}`);
}

/**
 * How a stream is opened: `observe` is the recorder's own read-only stream from an output offset; `record` is a
 * user's stream that the recorder also reads (the agent then tells the output offset it starts at, resizes and,
 * with `input`, what was typed, in control messages the gateway keeps to itself).
 */
export type StreamOptions = { observe: { from: number; input: boolean } } | { record: { input: boolean } };

function streamQuery(options: StreamOptions | undefined): string {
  if (!options) return '';
  if ('observe' in options) return `?observe=${options.observe.from}${options.observe.input ? '&input=1' : ''}`;
  return `?record=1${options.record.input ? '&input=1' : ''}`;
}

/** The Authorization of one `GET /attach` to this agent, asked for ahead of the attach (it is good for one use). */
export const authorizeAttach = (address: string, credentials: AgentCredentials): Promise<string> => authorize(address, credentials, 'GET', '/attach');

/**
 * Opens the terminal stream of a session on its agent, once the agent has proven it is the session's: with
 * `authorization` from authorizeAttach when the caller has one, else after a challenge of its own.
 */
export async function connectAgent(address: string, credentials: AgentCredentials, options?: StreamOptions, authorization?: string): Promise<WebSocket> {
  authorization ??= await authorize(address, credentials, 'GET', '/attach');
  const query = streamQuery(options);
  return new WebSocket(target(address).ws + query, {
    headers: withTraceparent({ authorization }),
    maxPayload: MAX_FRAME,
    handshakeTimeout: 10_000,
    perMessageDeflate: false,
  });
}

/** The agent's end of an upgraded stream: its socket, paused, and the bytes that came with the upgrade's answer. */
export interface AgentStream {
  socket: Socket;
  head: Buffer;
}

const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/**
 * The session's terminal stream as a plain socket after the WebSocket upgrade, for the gateway's relay
 * (ws/proxy.ts), which passes the frames on without decoding them. Same checks as connectAgent: the agent proves
 * it is the session's first; no extension is asked for, so every frame is a plain RFC 6455 frame.
 */
export async function openAgentStream(address: string, credentials: AgentCredentials, options?: StreamOptions, authorization?: string): Promise<AgentStream> {
  authorization ??= await authorize(address, credentials, 'GET', '/attach');
  const key = randomBytes(16).toString('base64');
  const expected = createHash('sha1')
    .update(key + WEBSOCKET_GUID)
    .digest('base64');
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      ...target(address).http,
      method: 'GET',
      path: `/attach${streamQuery(options)}`,
      headers: withTraceparent({
        authorization,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
      }),
      timeout: 10_000,
    });
    req.on('upgrade', (response, socket, head) => {
      socket.pause();
      if (response.headers['sec-websocket-accept'] !== expected || response.headers['sec-websocket-extensions'] !== undefined) {
        socket.destroy();
        return reject(new AgentUnreachableError(`agent at ${address} answered the upgrade wrongly`));
      }
      socket.setTimeout(0);
      socket.setNoDelay(true);
      // It may wait, paused, before its relay reads it (attach-ahead.ts): an error meanwhile only ends it.
      socket.on('error', () => socket.destroy());
      resolve({ socket, head });
    });
    req.on('response', (response) => {
      response.resume();
      req.destroy();
      reject(new AgentUnreachableError(`agent at ${address} answered ${response.statusCode} to the upgrade`));
    });
    req.on('timeout', () => req.destroy(new AgentUnreachableError(`agent at ${address}: no upgrade within 10 s`)));
    req.on('error', (error) => reject(error instanceof AgentUnreachableError ? error : new AgentUnreachableError(`agent at ${address}: ${error.message}`)));
    req.end();
  });
}
