// Local backend: each session's agent is a process on this host, listening on a unix socket in a private
// (0700) directory. Agents are started detached so they outlive a gateway restart (reattach still works);
// they end themselves at their limits when no gateway is left to stop them. Whose account a shell runs as, and
// who may have one at all, is local-accounts.ts's business. Agents start with only their own settings: nothing of
// the gateway's environment (database URL, secrets) reaches them or their shells. Starting one is local-start.ts.
// A server that cannot switch users runs non-admins' shells in a sandbox (local-sandbox.ts) when bubblewrap works.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@boxyard/kit';
import { agentRuntime } from './agent-runtime.ts';
import { adminsOnlyMessage, createAccountResolver, switchAbility, type LocalAccountsConfig, type SwitchAbility } from './local-accounts.ts';
import { homeBaseOf, probeSandbox, type SandboxConfig } from './local-sandbox.ts';
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
  /** Non-admins' shells when the server cannot switch users; off when not given. */
  sandbox?: SandboxConfig;
  /** The service's state directory (default place of the sandbox homes; hidden from sandboxes). */
  stateDir?: string | undefined;
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
      if (error instanceof UnsafeDirectoryError)
        throw new ConfigError(`config: backend.local.socket_dir: ${error.message}; it must be a directory of this user's`);
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
 * `pid:<n> warm:<slot>` for a spare it took (its command line names the slot); ` sandbox` after either when its
 * shell runs in a sandbox.
 */
function agentOf(session: { id: string; resource: string | null }): { pid: number; tag: string } | undefined {
  const match = /^pid:(\d+)(?: warm:([0-9a-f-]{36}))?(?: sandbox)?$/.exec(session.resource ?? '');
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

/** Where sandboxed shells go, or why there are none (undefined: the server switches users, no sandbox needed). */
function sandboxSetup(options: LocalBackendOptions, ability: SwitchAbility, socketDir: string): LocalAgents['sandbox'] | { reason: string } | undefined {
  if (ability.canSwitch) return undefined;
  const config = options.sandbox;
  if (!config?.enabled) return { reason: 'the sandbox is turned off (backend.local.sandbox.enabled)' };
  const homeBase = homeBaseOf(config, options.stateDir);
  if (!homeBase) return { reason: 'no place for sandbox homes: set backend.local.sandbox.home_base (or state_dir)' };
  const probe = probeSandbox(config.bwrap);
  if (!probe.available) return { reason: probe.reason };
  const privatePaths = [socketDir, homeBase, ...(options.stateDir ? [options.stateDir] : []), ...(process.env.BOXYARD_HOME ? [process.env.BOXYARD_HOME] : [])];
  return { config, homeBase, privatePaths };
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
  const setup = sandboxSetup(options, ability, dir);
  const sandbox = setup && 'homeBase' in setup ? setup : undefined;
  const noSandbox = setup && 'reason' in setup ? setup.reason : undefined;
  const refusedMessage = `${adminsOnlyMessage(ability.self)}${noSandbox ? ` (No sandbox for them: ${noSandbox}.)` : ''}`;
  if (sandbox) {
    options.log.info(
      `terminal: running as ${ability.self.name} (uid ${ability.self.uid}), which cannot switch users: admins get terminals as this account, everyone else in a bubblewrap sandbox with a home under ${sandbox.homeBase}`,
    );
  } else if (!ability.canSwitch) {
    options.log.warn(
      `terminal: running as ${ability.self.name} (uid ${ability.self.uid}), which cannot switch users: only admins get terminals (as this account)${noSandbox ? `; no sandbox for the others: ${noSandbox}` : ''}`,
    );
  }
  const runtime = agentRuntime(process.execArgv, process.env, join(dir, 'compile-cache'));
  const agents: LocalAgents = {
    dir,
    shell: options.shell,
    ability,
    resolver,
    runtime,
    sandbox,
    warm: createWarmAgents(options.warmAgents ?? 0, (slot) => spawnSpare(runtime, dir, slot)),
    exitListeners: [],
    exitCodes: new Map(),
  };

  const asServerMessage = "this shell runs as the server's own account, which only admins may use; start a new terminal";
  return {
    kind: 'local',
    refusal(user, session) {
      if (ability.canSwitch || user.role === 'admin') return undefined;
      if (!sandbox) return refusedMessage;
      // A shell started for an admin runs as the server itself: not for its owner once demoted.
      if (session?.resource && !session.resource.endsWith(' sandbox')) return asServerMessage;
      return undefined;
    },
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
