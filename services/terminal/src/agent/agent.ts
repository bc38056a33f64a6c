// The agent: owns one shell on a pseudo-terminal and a bounded scrollback ring, and serves them to the gateway
// over a tiny HTTP + WebSocket server (a unix socket under the local backend, a TCP port in a session pod).
// Every request but /healthz and /challenge needs the gateway's signature (handshake.ts). The same program runs
// locally and in the pod.
//   GET  /healthz     readiness (no secret, no information)
//   POST /challenge   the agent proves it is the session's agent, and hands out a one-time nonce for the call
//   GET  /status      activity and exit state, for the gateway's reaper
//   POST /terminate   end the shell: {"reason": "stopped" | "idle_timeout" | ...}
//   WS   /attach      terminal I/O in the frame format of ../protocol.ts: replay of the scrollback, then live
// The parts: shell-process.ts starts the shell, shell-session.ts serves its session (output-fanout.ts paces its
// output), agent-server.ts answers the routes.
import { rmSync } from 'node:fs';
import type { ExitReason } from '../protocol.ts';
import { createAgentServer, listenAgent } from './agent-server.ts';
import { publicKeyFrom, type ChallengeAnswer } from './handshake.ts';
import type { AgentSettings } from './settings.ts';
import { prepareShell } from './shell-process.ts';
import { ShellSession } from './shell-session.ts';

export { HIGH_WATER, LOW_WATER } from './output-fanout.ts';

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
  /** The answer to the challenge the settings brought (BOXYARD_AGENT_CHALLENGE), when it is the gateway's. */
  answer: ChallengeAnswer | undefined;
}

/**
 * `ready` is told the address (and the answer to the settings' challenge) as soon as the agent listens, before its
 * shell is spawned: the gateway's next steps (the session's record, its answer, the browser's WebSocket) then run
 * while the spawn does (a fork of this process, ~2 ms, half of a claimed spare's start). Nothing is lost: the shell
 * is spawned and its session made in the same turn of the event loop, before any request is read.
 */
export async function startAgent(
  settings: AgentSettings,
  options: { log?: (message: string) => void; ready?: (address: string, answer: RunningAgent['answer']) => void } = {},
): Promise<RunningAgent> {
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const gatewayKey = publicKeyFrom(settings.BOXYARD_AGENT_GATEWAY_KEY);
  // What can make the shell's start fail is checked before the agent says it is ready.
  const spawnShell = prepareShell(settings, log);
  const current: { session?: ShellSession } = {};
  const agentServer = createAgentServer(settings, () => current.session, gatewayKey);
  const address = await listenAgent(agentServer.server, settings.BOXYARD_AGENT_LISTEN);
  const { BOXYARD_AGENT_CHALLENGE: challenge, BOXYARD_AGENT_CHALLENGE_SIGNATURE: signature } = settings;
  const answer = challenge && signature ? agentServer.answer(challenge, signature) : undefined;
  options.ready?.(address, answer);

  const shell = spawnShell();
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((resolve) => (resolveDone = resolve));
  const started = new ShellSession(settings, shell, log, (code) => {
    agentServer.close();
    if (shell.temporary) rmSync(shell.home, { recursive: true, force: true, maxRetries: 2 });
    resolveDone(code);
  });
  current.session = started;

  // Nothing the agent does from here on needs root: drop to the shell's account (defence in depth; the
  // listening socket stays open).
  if (shell.switching) {
    process.setgid!(shell.account.gid);
    process.setuid!(shell.account.uid);
  }

  return { address, done, terminate: (reason) => started.terminate(reason), answer };
}
