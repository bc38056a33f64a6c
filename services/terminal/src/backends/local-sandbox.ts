// Non-admin shells on a server that cannot switch users (the usual non-root `make run`): each runs in a bubblewrap
// sandbox (Debian's `bubblewrap`, over unprivileged user namespaces), still as the server's uid on the host, but
// in namespaces of its own where nothing of the server is reachable:
// - a root of its own (a read-only tmpfs) with only the system bound in, read-only: /usr (and /bin, /lib, /lib64,
//   /sbin as the symlinks or binds the host has), /opt, /etc without its secrets (shadow files, private keys,
//   /etc/boxyard); nothing else of the host's file system: not the installation's state (.boxyard, secrets.json,
//   the agents' sockets), not the checkout, not /home, /root, /var or /run;
// - its home read-write: `<home_base>/<user id>` on the host (kept between sessions), `/home/<username>` inside;
// - a private /tmp and /var/tmp (tmpfs, bounded, gone with the session), a minimal /dev (null, zero, random, tty,
//   its own devpts: no other session's terminal), a new /proc of its own pid namespace (none of the server's or
//   other sessions' processes, so no /proc/<pid>/environ of the agent), its own IPC and UTS (hostname `terminal`);
// - no capabilities, no further user namespaces (`--disable-userns`: no `unshare -r` to mount things), the
//   sandbox dies with its agent; the environment is the agent's clean allow-list (TERM, LANG, HOME, USER, SHELL,
//   PATH), never the server's;
// - no network (a namespace of its own with only a loopback that is down), unless `network` is on: then the host's
//   (git, curl, package managers work), loopback services and abstract unix sockets included — an X server or a
//   D-Bus of the server's uid would take the shell for that user, so it is for a server with an account of its own.
// Not `--new-session`: it would detach the shell from its terminal (no job control); TIOCSTI into this session's
// own terminal reaches only this sandbox's shell.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';

export interface SandboxConfig {
  enabled: boolean;
  home_base?: string | undefined;
  network: boolean;
  tmp_size_mb: number;
  bwrap: string;
}

/** Bound read-only from the host when present: symlinks (Debian's merged /usr) are recreated as symlinks. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

/** Secrets under /etc that the server's own uid may be able to read (group ssl-cert, a host install's config). */
const ETC_SECRETS = ['/etc/shadow', '/etc/shadow-', '/etc/gshadow', '/etc/gshadow-', '/etc/ssl/private', '/etc/boxyard', '/etc/sudoers', '/etc/sudoers.d'];

/** The SSH server's private host keys (the client's /etc/ssh/ssh_config stays). */
function sshHostKeys(): string[] {
  try {
    return readdirSync('/etc/ssh')
      .filter((name) => name.startsWith('ssh_host_') && name.endsWith('_key'))
      .map((name) => `/etc/ssh/${name}`);
  } catch {
    return [];
  }
}

export const SANDBOX_HOSTNAME = 'terminal';

/**
 * The directory name of a user's home under `home_base`: the user id (a UUID), never the username — usernames
 * may be `.` or `..`, and a name freed by a deleted user (or taken first by a provider's user) must not open the
 * old files to someone else. Anything that is not a UUID is hashed, so no input can name a path.
 */
export function homeDirectoryName(userId: string): string {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(userId)
    ? userId.toLowerCase()
    : createHash('sha256').update(userId).digest('hex').slice(0, 32);
}

/** The home's path inside the sandbox: `/home/<username>` when the name is a plain one, else `/home/user`. */
export function homeInside(username: string): string {
  return /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(username) ? `/home/${username}` : '/home/user';
}

const inside = (parent: string, child: string) => {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

function kindOf(path: string): 'dir' | 'file' | 'symlink' | undefined {
  try {
    const stat = lstatSync(path);
    return stat.isSymbolicLink() ? 'symlink' : stat.isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined;
  }
}

/** `--tmpfs` over a directory, `/dev/null` over a file: what hides `path` inside the read-only system binds. */
function mask(path: string): string[] {
  try {
    return statSync(path).isDirectory() ? ['--tmpfs', path, '--remount-ro', path] : ['--ro-bind', '/dev/null', path];
  } catch {
    return [];
  }
}

export interface SandboxPlan {
  /** The user's home on the host. */
  hostHome: string;
  /** Where it appears inside. */
  home: string;
  network: boolean;
  tmpSizeMb: number;
  /** The server's own paths (state, sockets, homes, config): hidden if a system bind would show them. */
  privatePaths: string[];
}

/** bubblewrap's arguments (before `--` and the shell) for one session. */
export function sandboxArguments(plan: SandboxPlan): string[] {
  const args = ['--unshare-all', ...(plan.network ? ['--share-net'] : []), '--unshare-user', '--disable-userns', '--die-with-parent', '--cap-drop', 'ALL'];
  const bound: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    const kind = kindOf(dir);
    if (kind === 'symlink') args.push('--symlink', readlinkSync(dir), dir);
    else if (kind === 'dir') {
      args.push('--ro-bind', dir, dir);
      bound.push(dir);
    }
  }
  const size = String(plan.tmpSizeMb * 1_048_576);
  for (const path of [...ETC_SECRETS, ...sshHostKeys(), ...plan.privatePaths.map((p) => resolve(p))]) {
    if (bound.some((dir) => inside(dir, path)) && !bound.includes(path)) args.push(...mask(path));
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--size', size, '--tmpfs', '/tmp', '--size', size, '--tmpfs', '/var/tmp');
  args.push('--bind', plan.hostHome, plan.home, '--hostname', SANDBOX_HOSTNAME, '--chdir', plan.home, '--remount-ro', '/');
  return args;
}

/** Whether bubblewrap runs here (installed, user namespaces allowed); the reason when not. */
export function probeSandbox(bwrap: string): { available: true } | { available: false; reason: string } {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--ro-bind', '/usr', '/usr', '--proc', '/proc', '--dev', '/dev'];
  for (const dir of ['/bin', '/lib', '/lib64']) {
    const kind = kindOf(dir);
    if (kind === 'symlink') args.push('--symlink', readlinkSync(dir), dir);
    else if (kind === 'dir') args.push('--ro-bind', dir, dir);
  }
  const result = spawnSync(bwrap, [...args, '--', existsSync('/usr/bin/true') ? '/usr/bin/true' : '/bin/true'], { encoding: 'utf8', timeout: 10_000, env: {} });
  if (result.error) {
    const missing = (result.error as NodeJS.ErrnoException).code === 'ENOENT';
    return { available: false, reason: missing ? `${bwrap} is not installed (Debian: apt-get install bubblewrap)` : `${bwrap}: ${result.error.message}` };
  }
  if (result.status !== 0)
    return {
      available: false,
      reason: `${bwrap} cannot create a sandbox here (${(result.stderr || `exit ${result.status}`).trim()}); unprivileged user namespaces may be disabled`,
    };
  return { available: true };
}

/** Where homes go: `home_base`, else `<state_dir>/homes`; undefined when neither is set. */
export function homeBaseOf(config: SandboxConfig, stateDir: string | undefined): string | undefined {
  return config.home_base ?? (stateDir ? join(stateDir, 'homes') : undefined);
}
