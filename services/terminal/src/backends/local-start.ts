// Starting a session's agent under the local backend: a spare that waits ready (warm-agent.ts) or a new process,
// detached, with only its own settings; then waiting for it to say where it listens.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ANSWER_PREFIX, READY_PREFIX, WARM_FLAG } from '../agent/main.ts';
import { DEFAULT_PATH, type AgentEnvironment } from '../agent/settings.ts';
import { telemetryEnvironment } from '../agent/tracing.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import type { createAccountResolver, SwitchAbility } from './local-accounts.ts';
import { homeDirectoryName, homeInside, sandboxArguments, type SandboxConfig } from './local-sandbox.ts';
import { ensurePrivateDirectory } from './private-directory.ts';
import type { AgentSpec, StartedAgent } from './types.ts';
import type { WarmAgents } from './warm-agent.ts';

const AGENT_MAIN = fileURLToPath(new URL('../agent/main.ts', import.meta.url));
const START_TIMEOUT_MS = 15_000;

/** The local backend's state: where its agents live, how they start, and what it knows of their ends. */
export interface LocalAgents {
  /** The private directory of the agents' sockets and logs. */
  dir: string;
  shell: string;
  ability: SwitchAbility;
  resolver: ReturnType<typeof createAccountResolver>;
  runtime: AgentRuntime;
  /** Set when the server cannot switch users and bubblewrap works: non-admins' shells run in it. */
  sandbox?: { config: SandboxConfig; homeBase: string; privatePaths: string[] } | undefined;
  warm: WarmAgents;
  exitListeners: ((sessionId: string, exitCode: number | null) => void)[];
  /** Exit statuses of the agents this replica started, by session: the newest EXIT_CODES_KEPT (rememberExit). */
  exitCodes: Map<string, number | null>;
}

/**
 * Exit statuses kept for the reaper's probe, which asks within one reaper interval (seconds) of an agent's exit: the
 * newest this many, so a long-running gateway's memory does not grow with every session it ever ran (it did by
 * ~90 bytes of heap per session: 9 MiB after 100,000 sessions, 0.5 MiB with this bound).
 */
export const EXIT_CODES_KEPT = 4096;

/** Records a session's exit status, dropping the oldest beyond `kept` (a Map iterates in insertion order). */
export function rememberExit(exitCodes: Map<string, number | null>, sessionId: string, exitCode: number | null, kept = EXIT_CODES_KEPT): void {
  exitCodes.delete(sessionId);
  exitCodes.set(sessionId, exitCode);
  while (exitCodes.size > kept) exitCodes.delete(exitCodes.keys().next().value!);
}

export const agentPaths = (dir: string, id: string) => ({ socket: join(dir, `${id}.sock`), log: join(dir, `${id}.log`) });

function spawnAgent(runtime: AgentRuntime, args: string[], env: Record<string, string>, log: string, stdin: 'ignore' | 'pipe'): ChildProcess {
  const logFd = openSync(log, 'a', 0o600);
  try {
    // Only the agent's own settings: nothing of the gateway's environment (database URL, secrets) goes along.
    return spawn(process.execPath, [...runtime.flags, AGENT_MAIN, ...args], {
      env: { ...env, ...runtime.env, PATH: DEFAULT_PATH },
      detached: true,
      stdio: [stdin, 'pipe', logFd],
    });
  } finally {
    closeSync(logFd);
  }
}

/** A spare agent for warm-agent.ts: started with no session, waiting for one on stdin. */
export function spawnSpare(runtime: AgentRuntime, dir: string, slot: string): ChildProcess {
  // The trace context of whatever request happens to be running is not the spare's: it gets its own at claim.
  const { TRACEPARENT: _parent, TRACESTATE: _state, ...otel } = telemetryEnvironment(process.env);
  const child = spawnAgent(runtime, [WARM_FLAG, slot], otel, join(dir, `warm-${slot}.log`), 'pipe');
  // A waiting spare holds nothing of the gateway's up: it leaves by itself when the gateway's end of stdin closes.
  child.stdin!.on('error', () => {}); // a spare that died meanwhile: its exit is what counts
  child.unref();
  for (const stream of [child.stdin, child.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
  child.once('exit', () => {
    if (!child.stdin?.writableEnded) rmSync(join(dir, `warm-${slot}.log`), { force: true });
  });
  return child;
}

/** The sandbox settings of a non-admin's shell on a server that cannot switch users: its home made ready. */
function sandboxEnvironment(agents: LocalAgents, spec: AgentSpec): AgentEnvironment {
  const sandbox = agents.sandbox;
  if (!sandbox) throw new Error('this server cannot switch users and has no sandbox: only admins get terminals');
  ensurePrivateDirectory(sandbox.homeBase);
  const hostHome = join(sandbox.homeBase, homeDirectoryName(spec.ownerId));
  ensurePrivateDirectory(hostHome); // a symlink or someone else's directory there is refused, never followed
  const home = homeInside(spec.ownerName);
  const args = sandboxArguments({ hostHome, home, network: sandbox.config.network, tmpSizeMb: sandbox.config.tmp_size_mb, privatePaths: sandbox.privatePaths });
  return {
    BOXYARD_AGENT_SANDBOX: JSON.stringify([sandbox.config.bwrap, ...args]),
    BOXYARD_AGENT_SANDBOX_HOME: home,
    BOXYARD_AGENT_SANDBOX_USER: /^[A-Za-z0-9_.-]{1,64}$/.test(spec.ownerName) ? spec.ownerName : 'user',
  };
}

/** Whether this session's shell goes into the sandbox: a non-admin's, on a server that cannot switch users. */
const sandboxed = (agents: LocalAgents, spec: AgentSpec) => !agents.ability.canSwitch && spec.ownerRole !== 'admin';

/** The agent's settings for this session. */
async function agentEnvironment(agents: LocalAgents, spec: AgentSpec, socket: string): Promise<AgentEnvironment> {
  // Switching: the user's own account. Not switching: admins as the server's account, everyone else sandboxed.
  const account = agents.ability.canSwitch
    ? await agents.resolver.accountFor({ id: spec.ownerId, username: spec.ownerName, providerIdentity: spec.ownerProviderIdentity })
    : undefined;
  return {
    ...(sandboxed(agents, spec) ? sandboxEnvironment(agents, spec) : {}),
    BOXYARD_AGENT_SESSION_ID: spec.sessionId,
    BOXYARD_AGENT_LISTEN: `unix:${socket}`,
    BOXYARD_AGENT_KEY: spec.agentKey,
    BOXYARD_AGENT_GATEWAY_KEY: spec.gatewayPublicKey,
    BOXYARD_AGENT_SHELL: agents.shell,
    BOXYARD_AGENT_SCROLLBACK_BYTES: String(spec.scrollbackBytes),
    BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: String(spec.idleTimeoutSeconds),
    BOXYARD_AGENT_REATTACH_GRACE_SECONDS: String(spec.reattachGraceSeconds),
    BOXYARD_AGENT_EXPIRES_AT: String(spec.expiresAt),
    BOXYARD_AGENT_PATH: DEFAULT_PATH,
    ...(account ? { BOXYARD_AGENT_RUN_AS: account.name } : {}),
    // Its answer comes back on stdout with the address: the first attach then needs no challenge of its own.
    ...(spec.challenge ? { BOXYARD_AGENT_CHALLENGE: spec.challenge.nonce, BOXYARD_AGENT_CHALLENGE_SIGNATURE: spec.challenge.signature } : {}),
  };
}

/** A waiting spare given this session, or a new agent started for it. */
function launch({ dir, runtime, warm }: LocalAgents, spec: AgentSpec, env: AgentEnvironment, log: string): { child: ChildProcess; resource: string } {
  const spare = warm.take();
  if (spare) {
    const child = spare.child;
    // The claim first, the log's new name after: the agent starts on its session meanwhile.
    child.stdin!.end(`${JSON.stringify({ ...env, ...telemetryEnvironment({}) })}\n`);
    renameSync(join(dir, `warm-${spare.slot}.log`), log);
    child.ref();
    return { child, resource: `pid:${child.pid} warm:${spare.slot}` };
  }
  const child = spawnAgent(runtime, ['--session', spec.sessionId], { ...env, ...telemetryEnvironment(process.env) }, log, 'ignore');
  return { child, resource: `pid:${child.pid}` };
}

/** Why an agent ended before it was ready: its own `cannot start:` line, or the last lines of its log. */
function startFailure(log: string): string {
  try {
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    const reason = lines.find((line) => line.includes('cannot start: '));
    return reason ? reason.slice(reason.indexOf('cannot start: ') + 'cannot start: '.length) : lines.slice(-3).join(' | ');
  } catch {
    return ''; // no log
  }
}

/** What the agent prints once it listens: its address, and its answer to the challenge it was given (if any). */
type Ready = Pick<StartedAgent, 'address' | 'answer'>;

/** The agent's answer line (`<nonce> <proof>`), or undefined when it is not one. */
function parseAnswer(line: string | undefined): StartedAgent['answer'] {
  const [nonce, proof] = (line?.slice(ANSWER_PREFIX.length).trim() ?? '').split(' ');
  return nonce && proof ? { nonce, proof } : undefined;
}

/** The address (and answer) the agent prints once it listens; rejects when it ends first or takes too long. */
function readyAddress(child: ChildProcess, log: string): Promise<Ready> {
  const stdout = child.stdout!;
  return new Promise<Ready>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`agent not ready within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    stdout.setEncoding('utf8');
    stdout.on('data', (chunk: string) => {
      output += chunk;
      const lines = output.split('\n');
      const line = lines.find((l) => l.startsWith(READY_PREFIX));
      if (line) {
        clearTimeout(timer);
        resolve({ address: line.slice(READY_PREFIX.length).trim(), answer: parseAnswer(lines.find((l) => l.startsWith(ANSWER_PREFIX))) });
      }
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      const detail = startFailure(log);
      reject(new Error(`agent exited with ${code} before it was ready${detail ? `: ${detail}` : ''}`));
    });
  });
}

export async function startAgent(agents: LocalAgents, spec: AgentSpec, onResource?: (resource: string) => void): Promise<StartedAgent> {
  ensurePrivateDirectory(agents.dir); // again: a temp cleaner may have removed it meanwhile
  const { socket, log } = agentPaths(agents.dir, spec.sessionId);
  const env = await agentEnvironment(agents, spec, socket);
  const launched = launch(agents, spec, env, log);
  const child = launched.child;
  const resource = env.BOXYARD_AGENT_SANDBOX ? `${launched.resource} sandbox` : launched.resource;
  const stdout = child.stdout!;
  if (child.pid !== undefined) onResource?.(resource);
  child.on('exit', (code, signal) => {
    const exitCode = signal ? null : code;
    rememberExit(agents.exitCodes, spec.sessionId, exitCode);
    for (const listener of agents.exitListeners) listener(spec.sessionId, exitCode);
  });
  try {
    const { address, answer } = await readyAddress(child, log);
    // From here on the agent lives on its own; the gateway may exit without taking it along.
    stdout.destroy();
    child.unref();
    return { address, resource, answer };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}
