// Local backend: each session's agent is a process on this host, listening on a unix socket in a private
// (0700) directory. Agents are started detached so they outlive a gateway restart (reattach still works);
// they end themselves at their limits when no gateway is left to stop them. Whose account a shell runs as, and
// who may have one at all, is local-accounts.ts's business. Agents start with only their own settings: nothing of
// the gateway's environment (database URL, secrets) reaches them or their shells.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@boxyard/kit';
import { READY_PREFIX, WARM_FLAG } from '../agent/main.ts';
import { DEFAULT_PATH, type AgentEnvironment } from '../agent/settings.ts';
import { adminsOnlyMessage, createAccountResolver, switchAbility, type LocalAccountsConfig, type SwitchAbility } from './local-accounts.ts';
import type { AgentSpec, BackendProbe, SessionBackend, StartedAgent } from './types.ts';
import { telemetryEnvironment } from '../agent/tracing.ts';
import { createWarmAgents } from './warm-agent.ts';
import { agentRuntime } from './agent-runtime.ts';
import { ensurePrivateDirectory, UnsafeDirectoryError } from './private-directory.ts';

const AGENT_MAIN = fileURLToPath(new URL('../agent/main.ts', import.meta.url));
const START_TIMEOUT_MS = 15_000;
/** sun_path is 108 bytes on Linux; `<uuid>.sock` takes 41 of them. */
const MAX_SOCKET_DIR = 60;

export interface LocalBackendOptions {
  shell: string;
  socketDir?: string | undefined;
  accounts: LocalAccountsConfig;
  /** What the process may do; measured when not given (tests pass what they want to see). */
  ability?: SwitchAbility;
  log: { info(message: string): void; warn(message: string): void };
  /** Spare agents kept started ahead of time (see warm-agent.ts); 0 starts every agent cold. */
  warmAgents?: number;
}

/** Where agents' sockets (and their compile cache) go when `backend.local.socket_dir` is not set. */
export const defaultSocketDir = () => join(tmpdir(), `boxyard-terminal-${process.getuid?.() ?? 'user'}`);

/**
 * The agents' directory: `socket_dir` as configured (refused unless it is a plain directory of ours), else the
 * default under the temp directory. Whatever someone else put at that fixed name first is left alone: the agents
 * go to a fresh private directory beside it instead (a restart then cannot reattach to them, the price of not
 * refusing to start).
 */
function socketDirectory(options: LocalBackendOptions): string {
  let configured = options.socketDir;
  if (configured && configured.length > MAX_SOCKET_DIR) {
    options.log.warn(`terminal: ${configured} is too long for unix socket paths; using ${defaultSocketDir()}`);
    configured = undefined;
  }
  if (configured) {
    try {
      ensurePrivateDirectory(configured);
    } catch (error) {
      if (error instanceof UnsafeDirectoryError) throw new ConfigError(`config: backend.local.socket_dir: ${error.message}; it must be a directory of this user's`);
      throw error;
    }
    return configured;
  }
  const fixed = defaultSocketDir();
  try {
    ensurePrivateDirectory(fixed);
    return fixed;
  } catch (error) {
    if (!(error instanceof UnsafeDirectoryError)) throw error;
    const fresh = mkdtempSync(`${fixed}-`); // 0700, ours, a name nobody could take first
    options.log.warn(`terminal: ${error.message}: not used, not changed; agents' sockets go to ${fresh}`);
    return fresh;
  }
}

/**
 * A session's resource: `pid:<n>` for an agent started for it (its command line names the session), or
 * `pid:<n> warm:<slot>` for a spare it took (its command line names the slot).
 */
function agentOf(session: { id: string; resource: string | null }): { pid: number; tag: string } | undefined {
  const match = /^pid:(\d+)(?: warm:([0-9a-f-]{36}))?$/.exec(session.resource ?? '');
  return match ? { pid: Number(match[1]), tag: match[2] ?? session.id } : undefined;
}

/** True when `pid` is still this session's agent (not a recycled pid of something else). */
function isAgent(agent: { pid: number; tag: string } | undefined): agent is { pid: number; tag: string } {
  if (!agent) return false;
  try {
    return readFileSync(`/proc/${agent.pid}/cmdline`, 'utf8').split('\0').includes(agent.tag);
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createLocalBackend(options: LocalBackendOptions): SessionBackend {
  const dir = socketDirectory(options);
  const ability = options.ability ?? switchAbility();
  const resolver = createAccountResolver(options.accounts, ability, options.shell);
  const refusedMessage = adminsOnlyMessage(ability.self);
  if (!ability.canSwitch) {
    options.log.warn(`terminal: running as ${ability.self.name} (uid ${ability.self.uid}), which cannot switch users: only admins get terminals (as this account)`);
  }
  const exitListeners: ((sessionId: string, exitCode: number | null) => void)[] = [];
  const exitCodes = new Map<string, number | null>();
  const paths = (id: string) => ({ socket: join(dir, `${id}.sock`), log: join(dir, `${id}.log`) });
  const runtime = agentRuntime(process.execArgv, process.env, join(dir, 'compile-cache'));
  const spawnAgent = (args: string[], env: Record<string, string>, log: string, stdin: 'ignore' | 'pipe'): ChildProcess => {
    const logFd = openSync(log, 'a', 0o600);
    try {
      // Only the agent's own settings: nothing of the gateway's environment (database URL, secrets) goes along.
      return spawn(process.execPath, [...runtime.flags, AGENT_MAIN, ...args], { env: { ...env, ...runtime.env, PATH: DEFAULT_PATH }, detached: true, stdio: [stdin, 'pipe', logFd] });
    } finally {
      closeSync(logFd);
    }
  };
  const warm = createWarmAgents(options.warmAgents ?? 0, (slot) => {
    // The trace context of whatever request happens to be running is not the spare's: it gets its own at claim.
    const { TRACEPARENT: _parent, TRACESTATE: _state, ...otel } = telemetryEnvironment(process.env);
    const child = spawnAgent([WARM_FLAG, slot], otel, join(dir, `warm-${slot}.log`), 'pipe');
    // A waiting spare holds nothing of the gateway's up: it leaves by itself when the gateway's end of stdin closes.
    child.stdin!.on('error', () => {}); // a spare that died meanwhile: its exit is what counts
    child.unref();
    for (const stream of [child.stdin, child.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    child.once('exit', () => {
      if (!child.stdin?.writableEnded) rmSync(join(dir, `warm-${slot}.log`), { force: true });
    });
    return child;
  });

  return {
    kind: 'local',

    refusal: (user) => (ability.canSwitch || user.role === 'admin' ? undefined : refusedMessage),

    async start(spec: AgentSpec, onResource?: (resource: string) => void): Promise<StartedAgent> {
      ensurePrivateDirectory(dir); // again: a temp cleaner may have removed it meanwhile
      // Switching: the user's own account. Not switching (admins only, see refusal): the server's.
      const account = ability.canSwitch ? await resolver.accountFor({ id: spec.ownerId, username: spec.ownerName, providerIdentity: spec.ownerProviderIdentity }) : undefined;
      const { socket, log } = paths(spec.sessionId);
      const env: AgentEnvironment = {
        BOXYARD_AGENT_SESSION_ID: spec.sessionId,
        BOXYARD_AGENT_LISTEN: `unix:${socket}`,
        BOXYARD_AGENT_KEY: spec.agentKey,
        BOXYARD_AGENT_GATEWAY_KEY: spec.gatewayPublicKey,
        BOXYARD_AGENT_SHELL: options.shell,
        BOXYARD_AGENT_SCROLLBACK_BYTES: String(spec.scrollbackBytes),
        BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: String(spec.idleTimeoutSeconds),
        BOXYARD_AGENT_REATTACH_GRACE_SECONDS: String(spec.reattachGraceSeconds),
        BOXYARD_AGENT_EXPIRES_AT: String(spec.expiresAt),
        BOXYARD_AGENT_PATH: DEFAULT_PATH,
        ...(account ? { BOXYARD_AGENT_RUN_AS: account.name } : {}),
      };
      const spare = warm.take();
      let child: ChildProcess;
      let resource: string;
      if (spare) {
        child = spare.child;
        resource = `pid:${child.pid} warm:${spare.slot}`;
        renameSync(join(dir, `warm-${spare.slot}.log`), log);
        child.stdin!.end(`${JSON.stringify({ ...env, ...telemetryEnvironment({}) })}\n`);
        child.ref();
      } else {
        child = spawnAgent(['--session', spec.sessionId], { ...env, ...telemetryEnvironment(process.env) }, log, 'ignore');
        resource = `pid:${child.pid}`;
      }
      const stdout = child.stdout!;
      if (child.pid !== undefined) onResource?.(resource);
      child.on('exit', (code, signal) => {
        const exitCode = signal ? null : code;
        exitCodes.set(spec.sessionId, exitCode);
        for (const listener of exitListeners) listener(spec.sessionId, exitCode);
      });
      try {
        const address = await new Promise<string>((resolve, reject) => {
          let output = '';
          const timer = setTimeout(() => reject(new Error(`agent not ready within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
          stdout.setEncoding('utf8');
          stdout.on('data', (chunk: string) => {
            output += chunk;
            const line = output.split('\n').find((l) => l.startsWith(READY_PREFIX));
            if (line) {
              clearTimeout(timer);
              resolve(line.slice(READY_PREFIX.length).trim());
            }
          });
          child.once('error', (error) => {
            clearTimeout(timer);
            reject(error);
          });
          child.once('exit', (code) => {
            clearTimeout(timer);
            let detail = '';
            try {
              const lines = readFileSync(log, 'utf8').trim().split('\n');
              const reason = lines.find((line) => line.includes('cannot start: '));
              detail = reason ? reason.slice(reason.indexOf('cannot start: ') + 'cannot start: '.length) : lines.slice(-3).join(' | ');
            } catch {
              // no log
            }
            reject(new Error(`agent exited with ${code} before it was ready${detail ? `: ${detail}` : ''}`));
          });
        });
        // From here on the agent lives on its own; the gateway may exit without taking it along.
        stdout.destroy();
        child.unref();
        return { address, resource };
      } catch (error) {
        child.kill('SIGKILL');
        throw error;
      }
    },

    async release(session) {
      const agent = agentOf(session);
      if (isAgent(agent)) {
        try {
          process.kill(agent.pid, 'SIGTERM');
        } catch {
          // gone
        }
        // The agent ends its shell on SIGTERM and leaves; insist after a while.
        for (let i = 0; i < 40 && isAgent(agent); i++) await sleep(100);
        if (isAgent(agent)) {
          try {
            process.kill(agent.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
      const { socket, log } = paths(session.id);
      rmSync(socket, { force: true });
      rmSync(log, { force: true });
    },

    async probe(session): Promise<BackendProbe> {
      if (isAgent(agentOf(session))) return { state: 'present' };
      return { state: 'gone', exitCode: exitCodes.get(session.id) ?? null };
    },

    onAgentExit(listener) {
      exitListeners.push(listener);
    },

    warmAgents: () => warm.waiting(),

    async close() {
      warm.close();
      exitListeners.length = 0;
    },
  };
}
