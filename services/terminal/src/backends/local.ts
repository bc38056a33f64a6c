// Local backend: each session's agent is a process on this host, listening on a unix socket in a private
// (0700) directory. Agents are started detached so they outlive a gateway restart (reattach still works);
// they end themselves at their limits when no gateway is left to stop them. Whose account a shell runs as, and
// who may have one at all, is local-accounts.ts's business. Agents start with only their own settings: nothing of
// the gateway's environment (database URL, secrets) reaches them or their shells. Starting one is local-start.ts.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@boxyard/kit';
import { agentRuntime } from './agent-runtime.ts';
import { adminsOnlyMessage, createAccountResolver, switchAbility, type LocalAccountsConfig, type SwitchAbility } from './local-accounts.ts';
import { agentPaths, spawnSpare, startAgent, type LocalAgents } from './local-start.ts';
import { ensurePrivateDirectory, UnsafeDirectoryError } from './private-directory.ts';
import type { BackendProbe, SessionBackend } from './types.ts';
import { createWarmAgents } from './warm-agent.ts';

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

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone
  }
}

/** Ends the session's agent (if it is still the session's) and removes its socket and log. */
async function release({ dir }: LocalAgents, session: { id: string; resource: string | null }): Promise<void> {
  const agent = agentOf(session);
  if (isAgent(agent)) {
    kill(agent.pid, 'SIGTERM');
    // The agent ends its shell on SIGTERM and leaves; insist after a while.
    for (let i = 0; i < 40 && isAgent(agent); i++) await sleep(100);
    if (isAgent(agent)) kill(agent.pid, 'SIGKILL');
  }
  const { socket, log } = agentPaths(dir, session.id);
  rmSync(socket, { force: true });
  rmSync(log, { force: true });
}

export function createLocalBackend(options: LocalBackendOptions): SessionBackend {
  const dir = socketDirectory(options);
  const ability = options.ability ?? switchAbility();
  const resolver = createAccountResolver(options.accounts, ability, options.shell);
  const refusedMessage = adminsOnlyMessage(ability.self);
  if (!ability.canSwitch) {
    options.log.warn(`terminal: running as ${ability.self.name} (uid ${ability.self.uid}), which cannot switch users: only admins get terminals (as this account)`);
  }
  const runtime = agentRuntime(process.execArgv, process.env, join(dir, 'compile-cache'));
  const agents: LocalAgents = {
    dir,
    shell: options.shell,
    ability,
    resolver,
    runtime,
    warm: createWarmAgents(options.warmAgents ?? 0, (slot) => spawnSpare(runtime, dir, slot)),
    exitListeners: [],
    exitCodes: new Map(),
  };

  return {
    kind: 'local',
    refusal: (user) => (ability.canSwitch || user.role === 'admin' ? undefined : refusedMessage),
    start: (spec, onResource) => startAgent(agents, spec, onResource),
    release: (session) => release(agents, session),
    async probe(session): Promise<BackendProbe> {
      if (isAgent(agentOf(session))) return { state: 'present' };
      return { state: 'gone', exitCode: agents.exitCodes.get(session.id) ?? null };
    },
    onAgentExit(listener) {
      agents.exitListeners.push(listener);
    },
    warmAgents: () => agents.warm.waiting(),
    async close() {
      agents.warm.close();
      agents.exitListeners.length = 0;
    },
  };
}
