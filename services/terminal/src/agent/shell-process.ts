// The session's shell: the account it runs as, its home and environment, the pseudo-terminal it runs on, and
// the end of every process of its session.
import { accessSync, chownSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import {
  currentAccount,
  dropPrivileges,
  environmentReadableBySameUser,
  lookupAccount,
  prepareHome,
  shellArguments,
  shellEnvironment,
  type Account,
} from './identity.ts';
import { createPtyInput, type PtyInput } from './pty-input.ts';
import { spawnWithOutput, type PtyOutput } from './pty-output.ts';
import { DEFAULT_PATH, type AgentSettings } from './settings.ts';

const require = createRequire(import.meta.url);
// node-pty is CommonJS with a native addon: loaded through require.
const pty = require('node-pty') as typeof NodePty;

export interface Shell {
  term: IPty;
  /** Keystrokes into the pty (pty-input.ts). */
  input: PtyInput;
  /** The shell's output, read into a reused buffer (pty-output.ts). */
  output: PtyOutput;
  account: Account;
  /** The shell runs as another account than this process. */
  switching: boolean;
  home: string;
  /** The home was made for this session only: it goes with it. */
  temporary: boolean;
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

/** Refuses a shell that could read this agent's secrets, and a shell that is not there. */
function checkShell(settings: AgentSettings, account: Account, switching: boolean): void {
  // A shell of this process's own uid reads /proc/<agent>/environ (and its memory) unless the kernel marks this
  // process not dumpable, which it does once the process has changed its uid (and suid_dumpable is not 1).
  if (settings.BOXYARD_AGENT_PRIVATE_ENVIRONMENT && account.uid === 0)
    throw new Error('terminal agent: refusing to run shells as root (set BOXYARD_AGENT_DROP_TO)');
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
}

/**
 * Closes every descriptor above stderr, then runs the rest of its arguments. Whatever started the server may have
 * left descriptors open without close-on-exec (a directory's would let a sandboxed shell reach around its mounts):
 * they pass to the agent and would pass through bubblewrap to the shell (node-pty keeps them). Bash, Debian's
 * essential shell, handles descriptors above 9, which dash cannot.
 */
export const CLOSE_INHERITED_FDS = 'for fd in /proc/self/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; exec "$@"';

/**
 * The shell in its sandbox (local backend, a non-admin on a server that cannot switch users): bubblewrap with the
 * gateway's arguments, then the shell; it keeps this process's uid, its home is the sandbox's.
 */
function prepareSandboxedShell(settings: AgentSettings, sandbox: string[], log: (message: string) => void): () => Shell {
  const self = currentAccount();
  checkShell(settings, self, false);
  const shell = settings.BOXYARD_AGENT_SHELL;
  const home = settings.BOXYARD_AGENT_SANDBOX_HOME!;
  const env = shellEnvironment({
    account: { ...self, name: settings.BOXYARD_AGENT_SANDBOX_USER! },
    home,
    shell,
    lang: settings.BOXYARD_AGENT_LANG,
    path: settings.BOXYARD_AGENT_PATH ?? DEFAULT_PATH,
  });
  const [bwrap, ...args] = sandbox as [string, ...string[]];
  return () => {
    const { term, output } = spawnWithOutput(() =>
      pty.spawn('/bin/bash', ['-c', CLOSE_INHERITED_FDS, 'boxyard-sandbox', bwrap, ...args, '--', shell, ...shellArguments(shell)], {
        name: 'xterm-256color',
        cols: settings.BOXYARD_AGENT_COLS,
        rows: settings.BOXYARD_AGENT_ROWS,
        cwd: '/',
        env,
        encoding: null,
      }),
    );
    const input = createPtyInput(term, (error) => log(`pty write failed: ${error.message}`));
    return { term, input, output, account: self, switching: false, home, temporary: false };
  };
}

/**
 * What can make the shell's start fail (its account, its shell, its home), done and checked now; the function it
 * returns spawns the shell on a new pseudo-terminal, as the account the settings name. Split so that the agent can
 * say it is ready before the spawn (a fork of this process, ~2 ms: agent.ts) and still fail its start with the
 * reason when the shell cannot run.
 */
export function prepareShell(settings: AgentSettings, log: (message: string) => void): () => Shell {
  if (settings.BOXYARD_AGENT_SANDBOX) return prepareSandboxedShell(settings, settings.BOXYARD_AGENT_SANDBOX, log);
  // Before anything of the shell's exists: from here on this process is not dumpable (settings.ts says why).
  if (settings.BOXYARD_AGENT_DROP_TO) dropPrivileges(settings.BOXYARD_AGENT_DROP_TO);
  const account = shellAccount(settings);
  const switching = account.uid !== (process.getuid?.() ?? account.uid);
  checkShell(settings, account, switching);
  const shell = settings.BOXYARD_AGENT_SHELL;
  const { home, temporary } = settings.BOXYARD_AGENT_HOME ? volumeHome(settings.BOXYARD_AGENT_HOME, account) : prepareHome(account);
  const env = shellEnvironment({
    account,
    home,
    shell,
    lang: settings.BOXYARD_AGENT_LANG,
    path: settings.BOXYARD_AGENT_PATH ?? process.env.PATH ?? DEFAULT_PATH,
  });

  return () => {
    // node-pty's setuid/setgid in the child leaves the parent's supplementary groups (root's!) in place:
    // set the shell's group here first, so the shell has exactly that one.
    if (switching) process.setgroups!([account.gid]);
    const { term, output } = spawnWithOutput(() =>
      pty.spawn(shell, shellArguments(shell), {
        name: 'xterm-256color',
        cols: settings.BOXYARD_AGENT_COLS,
        rows: settings.BOXYARD_AGENT_ROWS,
        cwd: home,
        env,
        encoding: null,
        ...(switching ? { uid: account.uid, gid: account.gid } : {}),
      }),
    );
    // Input the pty does not take at once (a long paste into a busy program) waits here, as it did in node-pty's own
    // queue. Not by pausing the sockets: a paused socket reads no pongs either, and heartbeats would cut it off.
    const input = createPtyInput(term, (error) => log(`pty write failed: ${error.message}`));
    if (switching) handTerminalTo(term, account, log);
    return { term, input, output, account, switching, home, temporary };
  };
}

/**
 * A persistent home volume (session pods with `home`): used as it is, whoever owns it (fsGroup or the provisioner
 * made it writable); one the shell could not write fails the start rather than silently losing the user's files.
 */
function volumeHome(path: string, account: Account): { home: string; temporary: boolean } {
  try {
    if (!statSync(path).isDirectory()) throw new Error('not a directory');
    // The agent has dropped to the shell's uid by now (BOXYARD_AGENT_DROP_TO): this checks the shell's access.
    if (account.uid === (process.getuid?.() ?? account.uid)) accessSync(path, constants.W_OK);
  } catch (error) {
    throw new Error(`the home volume at ${path} is not a directory the shell (uid ${account.uid}) can write: ${(error as Error).message}`, { cause: error });
  }
  return { home: path, temporary: false };
}

/** The terminal device belongs to whoever uses it (mesg, write, programs that reopen /dev/tty). */
function handTerminalTo(term: IPty, account: Account, log: (message: string) => void): void {
  const ptsName = (term as unknown as { ptsName?: string }).ptsName;
  try {
    if (ptsName) chownSync(ptsName, account.uid, account.gid);
  } catch (error) {
    log(`could not hand ${ptsName} to ${account.name}: ${String(error)}`);
  }
}

/** Every process in the shell's session (its jobs, background processes): they end with the session. */
export function killSessionProcesses(sessionLeader: number): void {
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
