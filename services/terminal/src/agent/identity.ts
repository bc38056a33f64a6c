// Who the shell runs as, and the clean environment it gets: an allow-list (TERM, LANG, HOME, USER, SHELL, PATH),
// none of the server's variables.
import { execFileSync } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export interface Account {
  name: string;
  uid: number;
  gid: number;
  home: string | undefined;
}

function parsePasswdLine(line: string): Account | undefined {
  const [name, , uid, gid, , home] = line.trim().split(':');
  if (!name || uid === undefined || gid === undefined || !/^\d+$/.test(uid) || !/^\d+$/.test(gid)) return undefined;
  return { name, uid: Number(uid), gid: Number(gid), home: home || undefined };
}

/**
 * The account named `name`: /etc/passwd first, then NSS (`getent`: LDAP, sssd, ...). The file holds every account
 * the local backend creates (useradd) and reading it costs ~0.03 ms; `getent` is a child process the caller waits
 * for, its event loop blocked (77 ms median from a Node process holding 150 MiB at load 26), and every session start
 * looked the account up twice on its critical path (gateway, then agent): the gateway's part of a start fell from
 * 17-18 ms to 1-2 ms (medians of 6 starts). An account NSS lists differently from /etc/passwd is taken from the
 * file, as glibc's usual `passwd: files ...` order does.
 */
export function lookupAccount(name: string): Account | undefined {
  try {
    const local = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((line) => line.startsWith(`${name}:`));
    if (local) return parsePasswdLine(local);
  } catch {
    // no readable /etc/passwd: NSS may still know the account
  }
  try {
    return parsePasswdLine(execFileSync('getent', ['passwd', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return undefined;
  }
}

/** The account the agent itself runs as. In a pod the uid may have no passwd entry. */
export function currentAccount(): Account {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  try {
    const info = userInfo();
    return { name: info.username, uid, gid, home: info.homedir || undefined };
  } catch {
    return { name: `user${uid}`, uid, gid, home: undefined };
  }
}

function usableHome(account: Account): string | undefined {
  if (!account.home) return undefined;
  try {
    const stat = statSync(account.home);
    if (!stat.isDirectory() || stat.uid !== account.uid) return undefined;
    accessSync(account.home, constants.W_OK);
    return account.home;
  } catch {
    return undefined;
  }
}

/**
 * The account's home when it has a usable one it owns; otherwise a fresh private directory for this session
 * (`nobody`'s home is /nonexistent; a pod's uid may have none), which the caller removes at the end.
 */
export function prepareHome(account: Account): { home: string; temporary: boolean } {
  const home = usableHome(account);
  if (home) return { home, temporary: false };
  const dir = mkdtempSync(join(tmpdir(), 'boxyard-home-'));
  if ((process.getuid?.() ?? -1) === 0 && account.uid !== 0) chownSync(dir, account.uid, account.gid);
  return { home: dir, temporary: true };
}

export function shellEnvironment(input: { account: Account; home: string; shell: string; lang: string; path: string }): Record<string, string> {
  return {
    TERM: 'xterm-256color',
    LANG: input.lang,
    HOME: input.home,
    USER: input.account.name,
    SHELL: input.shell,
    PATH: input.path,
  };
}

/** Login-shell arguments for the shells that understand `-l`. */
export function shellArguments(shell: string): string[] {
  return /\/(bash|sh|zsh|ksh|dash|ash|fish)$/.test(shell) ? ['-l'] : [];
}

/**
 * Whether another process of this uid may read this one's /proc/<pid>/environ (and memory): true unless the kernel
 * marked the process not dumpable, which shows as /proc/self/environ belonging to root. It does so for a process
 * started from a binary its uid cannot read, or one that changed its uid.
 */
export function environmentReadableBySameUser(): boolean {
  try {
    return statSync('/proc/self/environ').uid === process.getuid?.();
  } catch {
    return true; // no /proc to tell: assume the worst
  }
}

/** Becomes `uid`:`gid` for good (groups: just `gid`): needs root or CAP_SETUID and CAP_SETGID, which go with it. */
export function dropPrivileges(target: { uid: number; gid: number }): void {
  if (process.getuid?.() === target.uid && process.getgid?.() === target.gid) return;
  process.setgroups!([target.gid]);
  process.setgid!(target.gid);
  process.setuid!(target.uid);
}
