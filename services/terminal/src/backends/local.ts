// Local backend: each session's agent is a process on this host, listening on a unix socket in a private
// (0700) directory. Agents are started detached so they outlive a gateway restart (reattach still works);
// they end themselves at their limits when no gateway is left to stop them. Whose account a shell runs as, and
// who may have one at all, is local-accounts.ts's business. Agents start with only their own settings: nothing of
// the gateway's environment (database URL, secrets) reaches them or their shells.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { READY_PREFIX } from '../agent/main.ts';
import { DEFAULT_PATH, type AgentEnvironment } from '../agent/settings.ts';
import { adminsOnlyMessage, createAccountResolver, switchAbility, type LocalAccountsConfig, type SwitchAbility } from './local-accounts.ts';
import type { AgentSpec, BackendProbe, SessionBackend, StartedAgent } from './types.ts';
import { telemetryEnvironment } from '../agent/tracing.ts';

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
}

function privateDirectory(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = statSync(dir);
  if (stat.uid !== process.getuid?.()) throw new Error(`terminal: socket directory ${dir} belongs to another user`);
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return dir;
}

const pidOf = (resource: string | null) => (resource?.startsWith('pid:') ? Number(resource.slice(4)) : undefined);

/** True when `pid` is still this session's agent (not a recycled pid of something else). */
function isAgent(pid: number, sessionId: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(sessionId);
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createLocalBackend(options: LocalBackendOptions): SessionBackend {
  let dir = options.socketDir ?? join(tmpdir(), `boxyard-terminal-${process.getuid?.() ?? 'user'}`);
  if (dir.length > MAX_SOCKET_DIR) {
    const fallback = join(tmpdir(), `boxyard-terminal-${process.getuid?.() ?? 'user'}`);
    options.log.warn(`terminal: ${dir} is too long for unix socket paths; using ${fallback}`);
    dir = fallback;
  }
  privateDirectory(dir);
  const ability = options.ability ?? switchAbility();
  const resolver = createAccountResolver(options.accounts, ability, options.shell);
  const refusedMessage = adminsOnlyMessage(ability.self);
  if (!ability.canSwitch) {
    options.log.warn(`terminal: running as ${ability.self.name} (uid ${ability.self.uid}), which cannot switch users: only admins get terminals (as this account)`);
  }
  const exitListeners: ((sessionId: string, exitCode: number | null) => void)[] = [];
  const exitCodes = new Map<string, number | null>();
  const paths = (id: string) => ({ socket: join(dir, `${id}.sock`), log: join(dir, `${id}.log`) });

  return {
    kind: 'local',

    refusal: (user) => (ability.canSwitch || user.role === 'admin' ? undefined : refusedMessage),

    async start(spec: AgentSpec, onResource?: (resource: string) => void): Promise<StartedAgent> {
      privateDirectory(dir);
      // Switching: the user's own account. Not switching (admins only, see refusal): the server's.
      const account = ability.canSwitch ? await resolver.accountFor({ id: spec.ownerId, username: spec.ownerName }) : undefined;
      const { socket, log } = paths(spec.sessionId);
      const env: AgentEnvironment = {
        BOXYARD_AGENT_SESSION_ID: spec.sessionId,
        BOXYARD_AGENT_LISTEN: `unix:${socket}`,
        BOXYARD_AGENT_SECRET_SHA256: spec.secretSha256,
        BOXYARD_AGENT_SHELL: options.shell,
        BOXYARD_AGENT_SCROLLBACK_BYTES: String(spec.scrollbackBytes),
        BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: String(spec.idleTimeoutSeconds),
        BOXYARD_AGENT_REATTACH_GRACE_SECONDS: String(spec.reattachGraceSeconds),
        BOXYARD_AGENT_EXPIRES_AT: String(spec.expiresAt),
        BOXYARD_AGENT_PATH: DEFAULT_PATH,
        ...(account ? { BOXYARD_AGENT_RUN_AS: account.name } : {}),
      };
      const logFd = openSync(log, 'a', 0o600);
      // Only the agent's own settings: nothing of the gateway's environment (database URL, secrets) goes along.
      const child = spawn(process.execPath, [AGENT_MAIN, '--session', spec.sessionId], {
        env: { ...env, ...telemetryEnvironment(process.env), PATH: DEFAULT_PATH },
        detached: true,
        stdio: ['ignore', 'pipe', logFd],
      });
      closeSync(logFd);
      const stdout = child.stdout!;
      if (child.pid !== undefined) onResource?.(`pid:${child.pid}`);
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
        return { address, resource: `pid:${child.pid}` };
      } catch (error) {
        child.kill('SIGKILL');
        throw error;
      }
    },

    async release(session) {
      const pid = pidOf(session.resource);
      if (pid !== undefined && isAgent(pid, session.id)) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // gone
        }
        // The agent ends its shell on SIGTERM and leaves; insist after a while.
        for (let i = 0; i < 40 && isAgent(pid, session.id); i++) await sleep(100);
        if (isAgent(pid, session.id)) {
          try {
            process.kill(pid, 'SIGKILL');
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
      const pid = pidOf(session.resource);
      if (pid !== undefined && isAgent(pid, session.id)) return { state: 'present' };
      return { state: 'gone', exitCode: exitCodes.get(session.id) ?? null };
    },

    onAgentExit(listener) {
      exitListeners.push(listener);
    },

    async close() {
      exitListeners.length = 0;
    },
  };
}
