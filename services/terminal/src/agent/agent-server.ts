// The agent's HTTP + WebSocket server (the routes are listed in agent.ts). Every request but /healthz and
// /challenge needs the gateway's signature (handshake.ts); a challenge the gateway signed is kept apart from any other.
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { KeyObject } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { EXIT_REASONS, type ExitReason } from '../protocol.ts';
import { FramedSocket } from './framed-socket.ts';
import {
  agentProof,
  CHALLENGE_HEADER,
  CHALLENGE_PATH,
  CHALLENGE_SIGNATURE_HEADER,
  challengeSignedAt,
  createChallenges,
  isNonce,
  parseAuthorization,
  signatureValid,
  type ChallengeAnswer,
} from './handshake.ts';
import type { AgentSettings } from './settings.ts';
import type { ShellSession } from './shell-session.ts';
import { traceAgentRequest } from './tracing.ts';

const MAX_FRAME = 1_048_576;
/** Challenges answered and not yet used: a gateway uses its nonce within a round trip. */
const MAX_CHALLENGES = 256;
const CHALLENGE_TTL_MS = 30_000;

/** What the routes work with. */
interface Endpoints {
  settings: AgentSettings;
  /** The session, once its shell runs (the agent listens, and says so, just before: agent.ts). */
  session: () => ShellSession | undefined;
  gatewayKey: KeyObject;
  /** Challenges the gateway signed: nobody else can add any, so none can push the gateway's out. */
  challenges: ReturnType<typeof createChallenges>;
  /**
   * Unsigned challenges, from gateways older than the signed challenge (a session started by a new replica while an
   * old one still runs, during a rolling upgrade). Anyone can fill this table, and only this one.
   */
  legacyChallenges: ReturnType<typeof createChallenges>;
}

export interface AgentServer {
  server: Server;
  /**
   * Answers a challenge the gateway signed that came another way than `POST /challenge` (the local backend's
   * stdin), exactly as that route would: once per nonce, only while fresh; undefined when it is not the gateway's.
   */
  answer(gatewayNonce: string, signature: string): ChallengeAnswer | undefined;
  /** Stops listening and ends every connection. */
  close(): void;
}

function reply(response: ServerResponse, statusCode: number, body: unknown): void {
  response.writeHead(statusCode, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}

// The gateway signed this very call (method and path) over a nonce this agent issued and has not seen used.
function authorized({ settings, gatewayKey, challenges, legacyChallenges }: Endpoints, request: IncomingMessage, path: string): boolean {
  const presented = parseAuthorization(request.headers.authorization);
  if (!presented) return false;
  const gatewayNonce = challenges.take(presented.nonce) ?? legacyChallenges.take(presented.nonce);
  if (!gatewayNonce) return false;
  return signatureValid(gatewayKey, settings.BOXYARD_AGENT_SESSION_ID, presented.nonce, gatewayNonce, request.method ?? 'GET', path, presented.signature);
}

/** The agent's answer to a challenge the gateway signed (fresh, its nonce not seen before), else undefined. */
function signedAnswer({ settings, gatewayKey, challenges }: Endpoints, gatewayNonce: string, signature: unknown): ChallengeAnswer | undefined {
  const madeAt = challengeSignedAt(gatewayKey, settings.BOXYARD_AGENT_SESSION_ID, gatewayNonce, signature);
  if (madeAt === undefined || !challenges.admit(gatewayNonce, madeAt)) return undefined;
  const nonce = challenges.issue(gatewayNonce);
  return { nonce, proof: agentProof(settings.BOXYARD_AGENT_KEY, settings.BOXYARD_AGENT_SESSION_ID, gatewayNonce, nonce) };
}

function answerChallenge(endpoints: Endpoints, request: IncomingMessage, response: ServerResponse): void {
  const { settings, legacyChallenges } = endpoints;
  const gatewayNonce = request.headers[CHALLENGE_HEADER];
  if (!isNonce(gatewayNonce)) return reply(response, 400, { message: `${CHALLENGE_HEADER} must be 32 random bytes, base64url` });
  const signature = request.headers[CHALLENGE_SIGNATURE_HEADER];
  if (signature !== undefined) {
    const answer = signedAnswer(endpoints, gatewayNonce, signature);
    return answer ? reply(response, 200, answer) : reply(response, 401, { message: 'unauthorized' });
  }
  const nonce = legacyChallenges.issue(gatewayNonce);
  reply(response, 200, { nonce, proof: agentProof(settings.BOXYARD_AGENT_KEY, settings.BOXYARD_AGENT_SESSION_ID, gatewayNonce, nonce) });
}

/** POST /terminate: {"reason": ...}, "stopped" when not given. */
function terminate(session: ShellSession, request: IncomingMessage, response: ServerResponse): void {
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => {
    body += chunk;
    if (body.length > 4096) request.destroy();
  });
  request.on('end', () => {
    let parsed: unknown;
    try {
      parsed = body ? JSON.parse(body) : {};
    } catch {
      return reply(response, 400, { message: 'body must be JSON' });
    }
    const reason = (parsed as { reason?: unknown } | null)?.reason ?? 'stopped';
    if (!(EXIT_REASONS as readonly unknown[]).includes(reason)) return reply(response, 400, { message: 'invalid reason' });
    session.terminate(reason as ExitReason);
    reply(response, 202, session.status());
  });
}

function handleRequest(endpoints: Endpoints, request: IncomingMessage, response: ServerResponse): void {
  const path = (request.url ?? '/').split('?')[0];
  if (request.method === 'GET' && path === '/healthz') return reply(response, 200, { status: 'ok' });
  if (request.method === 'POST' && path === CHALLENGE_PATH) return answerChallenge(endpoints, request, response);
  if (!authorized(endpoints, request, path ?? '/')) return reply(response, 401, { message: 'unauthorized' });
  const session = endpoints.session();
  if (!session) return reply(response, 503, { message: 'starting' });
  if (request.method === 'GET' && path === '/status') return reply(response, 200, session.status());
  if (request.method === 'POST' && path === '/terminate') return terminate(session, request, response);
  reply(response, 404, { message: 'not found' });
}

/** WS /attach: the session's terminal, for a signed call. */
function handleUpgrade(endpoints: Endpoints, wss: WebSocketServer, request: IncomingMessage, socket: Duplex, head: Buffer): void {
  const path = (request.url ?? '/').split('?')[0];
  const session = endpoints.session();
  if (!session) {
    socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  if (path !== '/attach' || !authorized(endpoints, request, path)) {
    socket.end(`HTTP/1.1 ${path === '/attach' ? '401 Unauthorized' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    return;
  }
  // `?observe=<offset>[&input=1]`: the gateway's recorder (shell-session.ts observe); the signature covers the path.
  const query = new URLSearchParams((request.url ?? '').split('?')[1] ?? '');
  const observe = query.get('observe');
  const from = observe === null ? undefined : Number(observe);
  // `?record=1[&input=1]`: a user's stream the gateway's recorder reads too (shell-session.ts attach).
  const input = query.get('input') === '1';
  // ws answers the upgrade; the frames are then read and written by FramedSocket (framed-socket.ts says why).
  wss.handleUpgrade(request, socket, head, (ws) => {
    const peer = FramedSocket.from(ws, MAX_FRAME);
    if (from !== undefined && Number.isSafeInteger(from) && from >= 0) session.observe(peer, from, input);
    else session.attach(peer, query.get('record') === '1' ? { input } : undefined);
  });
}

/** `session`: the session once its shell runs; until then calls are answered 503 (none come: agent.ts). */
export function createAgentServer(settings: AgentSettings, session: () => ShellSession | undefined, gatewayKey: KeyObject): AgentServer {
  const endpoints: Endpoints = {
    settings,
    session,
    gatewayKey,
    challenges: createChallenges({ max: MAX_CHALLENGES, ttlMs: CHALLENGE_TTL_MS }),
    legacyChallenges: createChallenges({ max: MAX_CHALLENGES, ttlMs: CHALLENGE_TTL_MS }),
  };
  const server = createServer((request, response) =>
    traceAgentRequest(request, response, (request.url ?? '/').split('?')[0] ?? '/', () => handleRequest(endpoints, request, response)),
  );
  // No client tracking: its sockets are FramedSocket's once upgraded (their ws objects never hear of a close).
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME, clientTracking: false });
  server.on('upgrade', (request, socket, head) => traceAgentRequest(request, undefined, '/attach', () => handleUpgrade(endpoints, wss, request, socket, head)));
  return {
    server,
    answer: (gatewayNonce, signature) => (isNonce(gatewayNonce) ? signedAnswer(endpoints, gatewayNonce, signature) : undefined),
    close() {
      wss.close();
      server.close();
      server.closeAllConnections();
    },
  };
}

/** Listens where the settings say; the address actually listened on: `unix:/path` or `host:port` (port 0 resolved). */
export async function listenAgent(server: Server, listen: AgentSettings['BOXYARD_AGENT_LISTEN']): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if ('path' in listen) {
      rmSync(listen.path, { force: true });
      server.listen(listen.path, () => resolve());
    } else {
      server.listen(listen.port, listen.host, () => resolve());
    }
  });
  if ('path' in listen) chmodSync(listen.path, 0o600);
  const bound = server.address();
  return 'path' in listen ? `unix:${listen.path}` : typeof bound === 'object' && bound ? `${listen.host}:${bound.port}` : `${listen.host}:${listen.port}`;
}
