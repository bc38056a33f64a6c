// The agent: owns one shell on a pseudo-terminal and a bounded scrollback ring, and serves them to the gateway
// over a tiny HTTP + WebSocket server (a unix socket under the local backend, a TCP port in a session pod).
// Every request but /healthz and /challenge needs the gateway's signature (handshake.ts). The same program runs
// locally and in the pod.
//   GET  /healthz     readiness (no secret, no information)
//   POST /challenge   the agent proves it is the session's agent, and hands out a one-time nonce for the call
//   GET  /status      activity and exit state, for the gateway's reaper
//   POST /terminate   end the shell: {"reason": "stopped" | "idle_timeout" | ...}
//   WS   /attach      terminal I/O in the frame format of ../protocol.ts: replay of the scrollback, then live
import { accessSync, chmodSync, chownSync, constants, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { traceAgentRequest } from './tracing.ts';
import { createRequire } from 'node:module';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import { WebSocketServer, type WebSocket } from 'ws';
import { closeCodeFor, encodeServerMessage, EXIT_REASONS, parseClientControl, type ExitMessage, type ExitReason } from '../protocol.ts';
import { expiryReason } from './expiry.ts';
import { agentProof, CHALLENGE_HEADER, CHALLENGE_PATH, createChallenges, isNonce, parseAuthorization, publicKeyFrom, signatureValid } from './handshake.ts';
import { currentAccount, dropPrivileges, environmentReadableBySameUser, lookupAccount, prepareHome, shellArguments, shellEnvironment, type Account } from './identity.ts';
import { createPtyInput } from './pty-input.ts';
import { Scrollback } from './scrollback.ts';
import { DEFAULT_PATH, type AgentSettings } from './settings.ts';

const require = createRequire(import.meta.url);
// node-pty is CommonJS with a native addon: loaded through require.
const pty = require('node-pty') as typeof NodePty;

/** Above this many bytes queued for one socket, the pty is paused until every socket is back under LOW_WATER. */
export const HIGH_WATER = 1_048_576;
export const LOW_WATER = 262_144;
const MAX_FRAME = 1_048_576;
const MAX_BATCH = 65_536;
const BULK_READ = 2048;
const BULK_WAIT_MS = 2;
const PING_INTERVAL_MS = 30_000;
const TICK_MS = 5000;
/** Challenges answered and not yet used: a gateway uses its nonce within a round trip. */
const MAX_CHALLENGES = 256;
const CHALLENGE_TTL_MS = 30_000;

export interface AgentStatus {
  session_id: string;
  pid: number;
  started_at: number;
  last_activity_at: number;
  attached: number;
  detached_since: number | null;
  expires_at: number;
  exited: boolean;
  exit_code: number | null;
  /** The agent's clock, so durations are computed on one clock. */
  now: number;
  cols: number;
  rows: number;
}

export interface RunningAgent {
  /** `unix:/path` or `host:port` actually listened on (port 0 resolved). */
  address: string;
  /** Resolves with the shell's exit status once the agent has shut down. */
  done: Promise<number>;
  terminate(reason: ExitReason): void;
}

interface Peer {
  socket: WebSocket;
  queued: number;
  alive: boolean;
}

/**
 * The account the shell runs as: `BOXYARD_AGENT_RUN_AS` when given (the gateway gives it only when this agent can
 * switch: root, or CAP_SETUID/CAP_SETGID), else the agent's own.
 */
function shellAccount(settings: AgentSettings): Account {
  const self = currentAccount();
  const wanted = settings.BOXYARD_AGENT_RUN_AS;
  if (!wanted || wanted === self.name) return self;
  const account = lookupAccount(wanted);
  if (!account) throw new Error(`terminal agent: user ${wanted} does not exist on this host`);
  if (account.uid === 0) throw new Error(`terminal agent: refusing to run shells as root (${wanted})`);
  return account;
}

/** Every process in the shell's session (its jobs, background processes): they end with the session. */
function killSessionProcesses(sessionLeader: number): void {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return;
  }
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the parenthesised command: state ppid pgrp session ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[3]) === sessionLeader && Number(entry) !== process.pid) process.kill(Number(entry), 'SIGKILL');
    } catch {
      // gone already, or not ours
    }
  }
}

export async function startAgent(settings: AgentSettings, options: { log?: (message: string) => void } = {}): Promise<RunningAgent> {
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const gatewayKey = publicKeyFrom(settings.BOXYARD_AGENT_GATEWAY_KEY);
  const challenges = createChallenges({ max: MAX_CHALLENGES, ttlMs: CHALLENGE_TTL_MS });
  // Before anything of the shell's exists: from here on this process is not dumpable (settings.ts says why).
  if (settings.BOXYARD_AGENT_DROP_TO) dropPrivileges(settings.BOXYARD_AGENT_DROP_TO);
  const account = shellAccount(settings);
  const switching = account.uid !== (process.getuid?.() ?? account.uid);
  // A shell of this process's own uid reads /proc/<agent>/environ (and its memory) unless the kernel marks this
  // process not dumpable, which it does once the process has changed its uid (and suid_dumpable is not 1).
  if (settings.BOXYARD_AGENT_PRIVATE_ENVIRONMENT && account.uid === 0) throw new Error('terminal agent: refusing to run shells as root (set BOXYARD_AGENT_DROP_TO)');
  if (settings.BOXYARD_AGENT_PRIVATE_ENVIRONMENT && !switching && environmentReadableBySameUser()) {
    throw new Error(
      `the shell would run as this agent's uid ${process.getuid?.()} and could read its environment (the agent key, OTEL_* settings) in /proc: ` +
        'start the agent as root with CAP_SETUID and CAP_SETGID only, and BOXYARD_AGENT_DROP_TO=<uid>:<gid> (fs.suid_dumpable must not be 1)',
    );
  }
  const shell = settings.BOXYARD_AGENT_SHELL;
  try {
    accessSync(shell, constants.X_OK);
  } catch {
    throw new Error(`shell ${shell} does not exist or is not executable`);
  }
  const { home, temporary } = prepareHome(account);
  const env = shellEnvironment({
    account,
    home,
    shell,
    lang: settings.BOXYARD_AGENT_LANG,
    path: settings.BOXYARD_AGENT_PATH ?? process.env.PATH ?? DEFAULT_PATH,
  });

  // node-pty's setuid/setgid in the child leaves the parent's supplementary groups (root's!) in place:
  // set the shell's group here first, so the shell has exactly that one.
  if (switching) process.setgroups!([account.gid]);
  const term: IPty = pty.spawn(shell, shellArguments(shell), {
    name: 'xterm-256color',
    cols: settings.BOXYARD_AGENT_COLS,
    rows: settings.BOXYARD_AGENT_ROWS,
    cwd: home,
    env,
    encoding: null,
    ...(switching ? { uid: account.uid, gid: account.gid } : {}),
  });
  const shellPid = term.pid;
  // Input the pty does not take at once (a long paste into a busy program) waits here, as it did in node-pty's own
  // queue. Not by pausing the sockets: a paused socket reads no pongs either, and heartbeats would cut it off.
  const input = createPtyInput(term, (error) => log(`pty write failed: ${error.message}`));
  if (switching) {
    // The terminal device belongs to whoever uses it (mesg, write, programs that reopen /dev/tty).
    const ptsName = (term as unknown as { ptsName?: string }).ptsName;
    try {
      if (ptsName) chownSync(ptsName, account.uid, account.gid);
    } catch (error) {
      log(`could not hand ${ptsName} to ${account.name}: ${String(error)}`);
    }
  }

  const startedAt = Date.now();
  let lastActivityAt = startedAt;
  let detachedSince: number | null = startedAt;
  let cols = settings.BOXYARD_AGENT_COLS;
  let rows = settings.BOXYARD_AGENT_ROWS;
  const scrollback = new Scrollback(settings.BOXYARD_AGENT_SCROLLBACK_BYTES);
  const peers = new Set<Peer>();
  let paused = false;
  let exit: ExitMessage | undefined;
  let endReason: ExitReason | undefined;
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((resolve) => (resolveDone = resolve));

  const resumeIfDrained = () => {
    if (paused && [...peers].every((peer) => peer.queued < LOW_WATER)) {
      paused = false;
      term.resume();
    }
  };
  const sendData = (peer: Peer, data: Buffer) => {
    peer.queued += data.length;
    peer.socket.send(data, { binary: true }, () => {
      peer.queued -= data.length;
      resumeIfDrained();
    });
    if (peer.queued > HIGH_WATER && !paused) {
      // The slowest socket sets the pace: the pty stops being read, so the shell's writes block.
      paused = true;
      term.pause();
    }
  };

  // Output read from the pty in one turn of the event loop goes out as one frame (fewer, larger frames: a
  // flood costs less per byte), flushed before anything else is sent so the order never changes. A pty hands
  // out at most ~4 KiB per read, and a fast reader gets one read per turn: so when a read looks like bulk output
  // (BULK_READ or more) the frame waits BULK_WAIT_MS for more (up to MAX_BATCH), which made a flood ~16 times
  // fewer frames. Small reads (echoed keystrokes, prompts) still go out in the same turn.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let flushScheduled = false;
  let flushTimer: NodeJS.Timeout | undefined;
  const flush = () => {
    flushScheduled = false;
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = undefined;
    if (pendingBytes === 0) return;
    const data = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    for (const peer of peers) sendData(peer, data);
  };

  term.onData((chunk) => {
    const data = chunk as unknown as Buffer;
    scrollback.push(data);
    if (peers.size === 0) return;
    pending.push(data);
    pendingBytes += data.length;
    if (pendingBytes >= MAX_BATCH) flush();
    else if (data.length >= BULK_READ && !flushTimer) {
      flushScheduled = true;
      flushTimer = setTimeout(flush, BULK_WAIT_MS);
    } else if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  });

  const finish = (message: ExitMessage) => {
    flush();
    input.dispose();
    exit = message;
    const code = closeCodeFor(message.reason, message.code);
    for (const peer of peers) {
      peer.socket.send(encodeServerMessage(message));
      peer.socket.close(code, message.reason);
    }
    killSessionProcesses(shellPid);
    // Let the close frames go out, then stop listening and leave.
    setTimeout(() => {
      for (const peer of peers) peer.socket.terminate();
      clearInterval(ticker);
      wss.close();
      server.close();
      server.closeAllConnections();
      if (temporary) rmSync(home, { recursive: true, force: true, maxRetries: 2 });
      resolveDone(message.code ?? 1);
    }, peers.size > 0 ? 500 : 0).unref();
  };

  term.onExit(({ exitCode, signal }) => {
    // Output still in flight from the pty is delivered before the exit message.
    setTimeout(() => {
      const code = signal ? 128 + signal : exitCode;
      finish({ type: 'exit', code, signal: signal || null, reason: endReason ?? 'exited' });
    }, 50);
  });

  const terminate = (reason: ExitReason) => {
    if (exit || endReason) return;
    endReason = reason;
    log(`terminating the shell: ${reason}`);
    try {
      term.kill('SIGHUP');
    } catch {
      // already gone
    }
    // A shell that ignores SIGHUP gets SIGKILL.
    setTimeout(() => {
      if (!exit) {
        try {
          process.kill(shellPid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }, 3000).unref();
  };

  // Backstop for an agent whose gateway is gone: the limits it was started with still apply.
  let ticks = 0;
  const ticker = setInterval(() => {
    const reason = expiryReason(
      { now: Date.now(), expiresAt: settings.BOXYARD_AGENT_EXPIRES_AT, lastActivityAt, attached: peers.size, detachedSince },
      { idleTimeoutMs: settings.BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS * 1000, reattachGraceMs: settings.BOXYARD_AGENT_REATTACH_GRACE_SECONDS * 1000 },
    );
    if (reason) terminate(reason);
    if (++ticks % Math.round(PING_INTERVAL_MS / TICK_MS) !== 0) return;
    // A peer that didn't answer the previous ping is gone (half-open connection).
    for (const peer of peers) {
      if (!peer.alive) {
        peer.socket.terminate();
        continue;
      }
      peer.alive = false;
      peer.socket.ping();
    }
  }, TICK_MS);
  ticker.unref();

  // The gateway signed this very call (method and path) over a nonce this agent issued and has not seen used.
  const authorized = (request: IncomingMessage, path: string): boolean => {
    const presented = parseAuthorization(request.headers.authorization);
    if (!presented) return false;
    const gatewayNonce = challenges.take(presented.nonce);
    if (!gatewayNonce) return false;
    return signatureValid(gatewayKey, settings.BOXYARD_AGENT_SESSION_ID, presented.nonce, gatewayNonce, request.method ?? 'GET', path, presented.signature);
  };

  const answerChallenge = (request: IncomingMessage, response: ServerResponse) => {
    const gatewayNonce = request.headers[CHALLENGE_HEADER];
    if (!isNonce(gatewayNonce)) return reply(response, 400, { message: `${CHALLENGE_HEADER} must be 32 random bytes, base64url` });
    const nonce = challenges.issue(gatewayNonce);
    reply(response, 200, { nonce, proof: agentProof(settings.BOXYARD_AGENT_KEY, settings.BOXYARD_AGENT_SESSION_ID, gatewayNonce, nonce) });
  };

  const status = (): AgentStatus => ({
    session_id: settings.BOXYARD_AGENT_SESSION_ID,
    pid: process.pid,
    started_at: startedAt,
    last_activity_at: lastActivityAt,
    attached: peers.size,
    detached_since: detachedSince,
    expires_at: settings.BOXYARD_AGENT_EXPIRES_AT,
    exited: exit !== undefined,
    exit_code: exit?.code ?? null,
    now: Date.now(),
    cols,
    rows,
  });

  const reply = (response: ServerResponse, statusCode: number, body: unknown) => {
    response.writeHead(statusCode, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    response.end(JSON.stringify(body));
  };

  const server = createServer((request, response) => traceAgentRequest(request, response, (request.url ?? '/').split('?')[0] ?? '/', () => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/healthz') return reply(response, 200, { status: 'ok' });
    if (request.method === 'POST' && path === CHALLENGE_PATH) return answerChallenge(request, response);
    if (!authorized(request, path ?? '/')) return reply(response, 401, { message: 'unauthorized' });
    if (request.method === 'GET' && path === '/status') return reply(response, 200, status());
    if (request.method === 'POST' && path === '/terminate') {
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
        terminate(reason as ExitReason);
        reply(response, 202, status());
      });
      return;
    }
    reply(response, 404, { message: 'not found' });
  }));

  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME });
  server.on('upgrade', (request, socket, head) => traceAgentRequest(request, undefined, '/attach', () => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/attach' || !authorized(request, path)) {
      socket.end(`HTTP/1.1 ${path === '/attach' ? '401 Unauthorized' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => attach(ws));
  }));

  const attach = (socket: WebSocket) => {
    const peer: Peer = { socket, queued: 0, alive: true };
    lastActivityAt = Date.now();
    socket.on('pong', () => (peer.alive = true));
    socket.on('error', () => socket.terminate());
    // Replay and joining the live stream happen in the same tick: nothing is lost or doubled in between
    // (output not yet sent to the other sockets is already in the scrollback: send it to them first).
    flush();
    const replay = scrollback.snapshot();
    if (exit) {
      if (replay.length > 0) socket.send(replay, { binary: true });
      socket.send(encodeServerMessage(exit));
      socket.close(closeCodeFor(exit.reason, exit.code), exit.reason);
      return;
    }
    peers.add(peer);
    detachedSince = null;
    if (replay.length > 0) sendData(peer, replay);
    socket.on('message', (data, isBinary) => {
      if (exit) return;
      if (isBinary) {
        lastActivityAt = Date.now();
        input.write(Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]));
        return;
      }
      const parsed = parseClientControl(data.toString());
      if (!parsed.ok) {
        socket.send(encodeServerMessage({ type: 'error', message: parsed.error }));
        return;
      }
      const message = parsed.message;
      if (message.type === 'resize') {
        lastActivityAt = Date.now();
        cols = message.cols;
        rows = message.rows;
        term.resize(cols, rows);
      } else if (message.type === 'ping') {
        socket.send(encodeServerMessage({ type: 'pong' }));
      }
    });
    socket.on('close', () => {
      peers.delete(peer);
      if (peers.size === 0) detachedSince = Date.now();
      resumeIfDrained();
    });
  };

  const listen = settings.BOXYARD_AGENT_LISTEN;
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
  const address = 'path' in listen ? `unix:${listen.path}` : typeof bound === 'object' && bound ? `${listen.host}:${bound.port}` : `${listen.host}:${listen.port}`;

  // Nothing the agent does from here on needs root: drop to the shell's account (defence in depth; the
  // listening socket stays open).
  if (switching) {
    process.setgid!(account.gid);
    process.setuid!(account.uid);
  }

  return { address, done, terminate };
}
