// Which OS account a terminal user's shells run as under the local backend, and whether this server can give
// every user one of their own. A shell running as the server's own account could read everything the server can
// (its state directory with secrets.json, its /proc/<pid>/environ): that is never given to a non-admin.
//
// - The server can switch users when it is root, or has CAP_SETUID and CAP_SETGID as ambient capabilities (so its
//   agents inherit them). Then every terminal user gets an account:
//     1. the one `backend.local.accounts.map` names for their username — for local accounts only: an identity
//        provider's user got its username from the provider (first come, first served), so it is mapped only by
//        its identity, `oidc:<issuer>#<subject>`, never by a name that may be someone else's here — or else
//     2. (root only) a system account created on first use: `<prefix><first 12 hex digits of the user id>`
//        (e.g. `boxyard-3f2a9c01d4e5`), its own group, home `<home_base>/<name>` (0700), login shell the
//        configured shell, GECOS `Boxyard terminal user <user id>`. An existing account of that name without
//        that GECOS is someone else's and is never used.
//   Root (uid 0) is never a shell's account.
// - It cannot (the usual `make run`, the systemd unit's dynamic user): admins get shells as the server's own
//   account (they administer it anyway); everyone else is refused with a message that says why.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { currentAccount, lookupAccount, type Account } from '../agent/identity.ts';
import { ensurePrivateDirectory, UnsafeDirectoryError } from './private-directory.ts';

const run = promisify(execFile);

export interface LocalAccountsConfig {
  /** Prefix of created accounts' names. */
  prefix: string;
  /** Where created accounts' homes go (never inside the server's state directory). */
  home_base: string;
  /** Terminal username (local accounts) or `oidc:<issuer>#<subject>` (provider users) → existing OS account. */
  map: Record<string, string>;
}

export interface SwitchAbility {
  canSwitch: boolean;
  /** Whether accounts can be created (useradd needs root). */
  canCreate: boolean;
  /** The server's own account, for messages. */
  self: { name: string; uid: number };
}

const CAP_SETGID = 6;
const CAP_SETUID = 7;

function capabilitySet(name: 'CapEff' | 'CapAmb'): bigint {
  try {
    const line = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${name}:`));
    return line ? BigInt(`0x${line.slice(name.length + 1).trim()}`) : 0n;
  } catch {
    return 0n;
  }
}

const has = (set: bigint, cap: number) => (set & (1n << BigInt(cap))) !== 0n;

export function switchAbility(): SwitchAbility {
  const self = currentAccount();
  const root = self.uid === 0;
  const ambient = capabilitySet('CapAmb');
  const effective = capabilitySet('CapEff');
  // Root in a user namespace without the capabilities (e.g. a restricted container) can't switch either.
  const canSwitch = root ? has(effective, CAP_SETUID) && has(effective, CAP_SETGID) : has(ambient, CAP_SETUID) && has(ambient, CAP_SETGID);
  return { canSwitch, canCreate: root && canSwitch, self: { name: self.name, uid: self.uid } };
}

/** The message a non-admin gets when the server cannot give them an account of their own. */
export function adminsOnlyMessage(self: SwitchAbility['self']): string {
  return (
    `Terminals are for admins only on this server: it runs as the unprivileged OS user "${self.name}" (uid ${self.uid}) ` +
    'and cannot start shells as separate OS accounts, so a shell would run as the server itself and could read its ' +
    'secrets. To give every user a terminal, run the terminal service as root (each user then gets an OS account of ' +
    'their own) or use the Kubernetes backend.'
  );
}

/** The created account's name for a user id: fits the 32 characters useradd allows with a prefix up to 20. */
export const accountNameFor = (prefix: string, userId: string) => `${prefix}${userId.replace(/-/g, '').slice(0, 12).toLowerCase()}`;

export const accountComment = (userId: string) => `Boxyard terminal user ${userId}`;

function gecosOf(name: string): string | undefined {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${name}:`));
    return line?.split(':')[4];
  } catch {
    return undefined;
  }
}

export function createAccountResolver(config: LocalAccountsConfig, ability: SwitchAbility, shell: string) {
  const PROVIDER_KEY = 'oidc:';
  const entries = Object.entries(config.map);
  // Usernames are case-insensitive; provider identities are compared exactly (a subject is case-sensitive).
  const byUsername = new Map(entries.filter(([key]) => !key.startsWith(PROVIDER_KEY)).map(([user, account]) => [user.toLowerCase(), account]));
  const byIdentity = new Map(entries.filter(([key]) => key.startsWith(PROVIDER_KEY)).map(([key, account]) => [key.slice(PROVIDER_KEY.length), account]));
  const creating = new Map<string, Promise<Account>>();

  function ensureHome(account: Account): void {
    if (!account.home) return;
    // Another user's shell must not read this one's files; a symlink or someone else's directory at the home's
    // path (planted where home_base is writable by others) is never followed nor handed to the account.
    try {
      ensurePrivateDirectory(account.home, account);
    } catch (error) {
      if (error instanceof UnsafeDirectoryError)
        throw new Error(`the home directory of the OS account ${account.name} is unsafe (${error.message}); refusing to use it`, { cause: error });
      throw error;
    }
  }

  async function create(name: string, userId: string): Promise<Account> {
    mkdirSync(config.home_base, { recursive: true, mode: 0o755 });
    const home = join(config.home_base, name);
    try {
      await run('useradd', ['--system', '--user-group', '--create-home', '--home-dir', home, '--shell', shell, '--comment', accountComment(userId), name]);
    } catch (error) {
      // 9: the name is taken, e.g. another replica on this host created it a moment ago; checked below.
      if ((error as { code?: number }).code !== 9)
        throw new Error(`could not create the OS account ${name}: ${String((error as { stderr?: string }).stderr ?? error).trim()}`, { cause: error });
    }
    const account = lookupAccount(name);
    if (!account) throw new Error(`the OS account ${name} was created but cannot be found`);
    return account;
  }

  return {
    /** The OS account for this terminal user's shells (created when needed). Throws with a reason otherwise. */
    async accountFor(user: { id: string; username: string; providerIdentity?: string | undefined }): Promise<Account> {
      const mapped = user.providerIdentity !== undefined ? byIdentity.get(user.providerIdentity) : byUsername.get(user.username.toLowerCase());
      let account: Account;
      if (mapped) {
        const found = lookupAccount(mapped);
        if (!found) throw new Error(`the OS account ${mapped} (backend.local.accounts.map) does not exist`);
        account = found;
      } else {
        if (!ability.canCreate)
          throw new Error(
            `no OS account is mapped to ${user.providerIdentity !== undefined ? `oidc:${user.providerIdentity}` : user.username} in backend.local.accounts.map, and only a root server creates them`,
          );
        const name = accountNameFor(config.prefix, user.id);
        const existing = lookupAccount(name);
        if (existing) {
          if (!(gecosOf(name) ?? '').includes(accountComment(user.id)))
            throw new Error(`the OS account ${name} exists but was not created for this user; refusing to use it`);
          account = existing;
        } else {
          let pending = creating.get(name);
          if (!pending) {
            pending = create(name, user.id).finally(() => creating.delete(name));
            creating.set(name, pending);
          }
          account = await pending;
        }
        if (account.uid === 0) throw new Error(`refusing to run shells as root (the OS account ${account.name})`);
        ensureHome(account);
      }
      if (account.uid === 0) throw new Error(`refusing to run shells as root (the OS account ${account.name})`);
      return account;
    },
  };
}
