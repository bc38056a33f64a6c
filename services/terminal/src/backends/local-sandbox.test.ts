// Non-admin shells on a server that cannot switch users, tried for real: `boxyard dev` as `nobody` (no root, no
// capabilities; a secret in its environment), with Debian's bubblewrap over unprivileged user namespaces. A
// non-admin gets a working shell through the real WebSocket path whose home persists, and which cannot read
// secrets.json, another user's home, the server's environment or its processes, nor break out; admins keep their
// shell as the server's account. The test runner is root (CI): the server runs as nobody in a private mount
// namespace where the checkout is bound at a path nobody can reach (a checkout in a 0700 directory, such as a
// `mktemp -d` clone, would otherwise be unreadable to it); nothing of that mount is visible outside the server.
import { randomBytes } from 'node:crypto';
import { chmod, chown, copyFile, link, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevProcess, type DevProcess } from '@boxyard/test/harness/dev-process.ts';
import { api, createUser, login, openTerminal, upgradeStatus, type TerminalClient } from '../testing/test-gateway.ts';
import { homeDirectoryName, homeInside, probeSandbox, sandboxArguments } from './local-sandbox.ts';

const REPO = new URL('../../../../', import.meta.url).pathname.replace(/\/$/, '');
const NOBODY = 65534;
const SERVER_SECRET = `server-only-${randomBytes(6).toString('hex')}`;
const root = process.getuid?.() === 0;
const bwrap = probeSandbox('bwrap');

describe('sandbox arguments (unit)', () => {
  it('names homes by user id only, and never lets a username name a path', () => {
    expect(homeDirectoryName('3F2A9C01-D4E5-4A6B-8C7D-0123456789AB')).toBe('3f2a9c01-d4e5-4a6b-8c7d-0123456789ab');
    for (const id of ['..', '../../etc', 'a/b', '']) expect(homeDirectoryName(id)).toMatch(/^[0-9a-f]{32}$/);
    expect(homeInside('alice')).toBe('/home/alice');
    for (const name of ['..', '.', '.hidden', 'a/b', '-rf', '']) expect(homeInside(name)).toBe('/home/user');
  });

  it('binds the system read-only, the home read-write, and hides private paths a system bind would show', () => {
    const args = sandboxArguments({
      hostHome: '/srv/homes/u1',
      home: '/home/alice',
      network: false,
      tmpSizeMb: 64,
      privatePaths: ['/etc', '/opt/state', '/var/lib/boxyard'],
    });
    const line = args.join(' ');
    expect(line).toContain('--unshare-all --unshare-user --disable-userns --die-with-parent');
    expect(line).not.toContain('--share-net');
    expect(line).toContain('--ro-bind /etc /etc');
    expect(line).toContain('--bind /srv/homes/u1 /home/alice');
    expect(line).toContain(`--size ${64 * 1_048_576} --tmpfs /tmp`);
    expect(line).toContain('--proc /proc --dev /dev');
    expect(line).not.toContain('--new-session');
    expect(line.endsWith('--remount-ro /')).toBe(true);
    // /etc itself is a system bind (not masked as a whole); /var/lib is not bound, so nothing to hide there.
    expect(line).not.toContain('--tmpfs /etc ');
    expect(line).not.toContain('/var/lib/boxyard');
    expect(line).toContain('--ro-bind /dev/null /etc/shadow');
    expect(sandboxArguments({ hostHome: '/h', home: '/home/a', network: true, tmpSizeMb: 1, privatePaths: [] })).toContain('--share-net');
  });
});

/** Runs a command line in the shell and returns what it printed between two markers. */
async function run(term: TerminalClient, command: string): Promise<string> {
  const tag = randomBytes(4).toString('hex');
  // The quotes keep the echoed command line from matching the markers.
  term.type(`echo B""${tag}; ${command} 2>&1; echo E""${tag}\r`);
  const out = await term.waitFor(new RegExp(`^E${tag}$`, 'm'));
  return out.slice(out.lastIndexOf(`\nB${tag}\n`) + tag.length + 3, out.lastIndexOf(`\nE${tag}`)).trim();
}

async function shellOf(base: string, cookie: string, terminalCookie = 'main'): Promise<{ term: TerminalClient; id: string }> {
  const started = await api(base, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: terminalCookie } });
  expect(started.status, JSON.stringify(started.json)).toBe(200);
  return { term: await openTerminal(base, started.json.data.websocket_path as string, { cookie }), id: started.json.data.session.id as string };
}

/**
 * `boxyard dev` as nobody: `unshare --mount` (root) binds the checkout at a path under a 0755 directory, then
 * `setpriv` drops to nobody with no capabilities and no_new_privs; Node is linked there too (~/.cache is root's).
 * The server inherits descriptor 9, open on the checkout's directory (as a careless parent might leave one): a
 * sandbox that got it could read around its mounts through /proc/self/fd/9.
 */
async function startDevAsNobody(): Promise<{ dev: DevProcess; dir: string }> {
  const dir = await mkdtemp('/var/tmp/boxyard-sandbox-');
  await chmod(dir, 0o755);
  const src = join(dir, 'src');
  await mkdir(src, { mode: 0o755 });
  const node = join(dir, 'node');
  await link(process.execPath, node).catch(() => copyFile(process.execPath, node));
  await chmod(node, 0o755);
  const home = join(dir, 'home');
  await mkdir(home, { mode: 0o700 });
  await chown(home, NOBODY, NOBODY);
  // A `mktemp -d` clone is itself 0700: the bind keeps the checkout's own mode, so nobody needs o+rx on it for the
  // run (given back by restoreRepoMode).
  repoMode = (await stat(REPO)).mode & 0o7777;
  if ((repoMode & 0o005) !== 0o005) await chmod(REPO, repoMode | 0o005);
  try {
    return { dev: await startDev(dir, home, src, node), dir };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    await restoreRepoMode();
    throw error;
  }
}

let repoMode: number | undefined;
async function restoreRepoMode(): Promise<void> {
  if (repoMode !== undefined) await chmod(REPO, repoMode);
  repoMode = undefined;
}

async function startDev(dir: string, home: string, src: string, node: string): Promise<DevProcess> {
  const drop = `setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all`;
  return startDevProcess({
    home,
    launcher: (_node, main) => ({
      command: 'unshare',
      args: [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        `mount --bind "$1" "$2" && exec 9<"$1" && shift 2 && exec ${drop} -- "$@"`,
        'sh',
        REPO,
        src,
        node,
        main.replace(REPO, src),
      ],
    }),
    baseEnv: { PATH: process.env.PATH, HOME: dir, LANG: 'C.UTF-8', SERVER_ONLY_SECRET: SERVER_SECRET },
    env: { BOXYARD_ADMIN_PASSWORD: 'Sandbox-Admin-42' },
  });
}

// Root runs it (CI does): it needs root to start the server as nobody. Without bubblewrap it fails, naming why
// (`make test-deps` installs it).
describe.runIf(root)('local backend, server that cannot switch users (boxyard dev as nobody): non-admins in a bubblewrap sandbox', () => {
  let dev: DevProcess;
  let dir: string;
  let base: string;
  let admin: string;

  beforeAll(async () => {
    expect(bwrap.available ? '' : bwrap.reason).toBe('');
    ({ dev, dir } = await startDevAsNobody());
    base = dev.urls.terminal!;
    admin = await login(base, 'admin', 'Sandbox-Admin-42');
  }, 120_000);
  afterAll(async () => {
    await dev?.stop({ discard: true });
    if (dir) await rm(dir, { recursive: true, force: true });
    await restoreRepoMode();
  });

  it("gives a non-admin a working shell with a home of its own that outlives the session, and none of the server's state", async () => {
    const alice = await createUser(base, admin, 'alice');
    const bob = await createUser(base, admin, 'bob');
    const a = await shellOf(base, alice.cookie);
    const b = await shellOf(base, bob.cookie);
    expect(await run(a.term, 'echo $((6*7))')).toBe('42');
    // No network by default: not even the server's loopback port.
    expect(await run(a.term, `(exec 3<>/dev/tcp/127.0.0.1/${new URL(base).port}) && echo CONNECTED || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a.term, 'echo $HOME; pwd; echo $USER; id -u; hostname')).toBe(`/home/alice\n/home/alice\nalice\n${NOBODY}\nterminal`);
    expect(await run(a.term, 'echo hello > ~/keep.txt && echo tmp > /tmp/t && cat ~/keep.txt /tmp/t')).toBe('hello\ntmp');
    // Job control works (the shell owns its terminal).
    expect(await run(a.term, 'sleep 30 & kill %1 && wait; echo done')).toMatch(/done$/);

    // The installation's state: secrets.json, the agents' sockets and logs, the homes — not there at all.
    const secrets = join(dev.home, 'secrets.json');
    expect(await run(a.term, `cat ${secrets} >/dev/null && echo READ || echo REFUSED`)).toMatch(/No such file or directory\nREFUSED$/);
    expect(await run(a.term, `ls ${dev.home} ${join(dev.home, 'terminal')} >/dev/null && echo LISTED || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a.term, `ls ${REPO} >/dev/null && echo LISTED || echo REFUSED`)).toMatch(/REFUSED$/);
    // The root holds the system binds and the sandbox's own mounts, nothing else of the host (no /root, /work, /run).
    const top = (await run(a.term, 'echo $(ls /)')).split(' ');
    expect(
      top.filter((name) => !['bin', 'dev', 'etc', 'home', 'lib', 'lib32', 'lib64', 'libx32', 'opt', 'proc', 'sbin', 'tmp', 'usr', 'var'].includes(name)),
    ).toEqual([]);
    expect(await run(a.term, 'echo $(ls /var)')).toBe('tmp');

    // Bob's home: neither by its host path nor under /home; Alice's /home holds her own only.
    await run(b.term, 'echo bob-private > ~/note.txt');
    const bobHost = join(dev.home, 'terminal', 'homes', homeDirectoryName(bob.id));
    expect((await readFile(join(bobHost, 'note.txt'), 'utf8')).trim()).toBe('bob-private');
    expect(await run(a.term, `cat ${bobHost}/note.txt /home/bob/note.txt >/dev/null && echo READ || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a.term, 'ls /home')).toBe('alice');

    // The server's environment: not in the shell's, not in any process it can see.
    expect(await run(a.term, 'env')).not.toMatch(new RegExp(`${SERVER_SECRET}|BOXYARD_|DATABASE|postgres://`));
    expect(await run(a.term, `cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c ${SERVER_SECRET.slice(0, 12)} || true`)).toBe('0');
    // Its processes: a /proc of the sandbox's own pid namespace (bwrap's init, the shell, what it runs).
    expect(await run(a.term, `kill -0 ${dev.pid} && echo SIGNALLED || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a.term, `test -e /proc/${dev.pid} && echo SEEN || echo UNSEEN`)).toBe('UNSEEN');
    expect(Number(await run(a.term, 'ls -d /proc/[0-9]* | wc -l'))).toBeLessThan(8);

    // A new session of Alice's (a new sandbox) finds her file.
    expect((await api(base, 'DELETE', `/api/terminal/sessions/${a.id}/stop`, { cookie: alice.cookie })).status).toBe(200);
    await a.term.closed;
    const again = await shellOf(base, alice.cookie, 'second');
    expect(await run(again.term, 'cat ~/keep.txt; ls /tmp')).toBe('hello');
    await again.term.close();
    await b.term.close();
  });

  it('contains escape attempts: read-only system, no new user namespaces or mounts, no symlinks out, no other terminal', async () => {
    const mallory = await createUser(base, admin, 'mallory');
    const victim = await createUser(base, admin, 'victim');
    const { term } = await shellOf(base, mallory.cookie);
    const other = await shellOf(base, victim.cookie);
    await run(other.term, 'true');
    const secrets = join(dev.home, 'secrets.json');
    expect(await run(term, 'touch /usr/x /etc/x /x 2>&1 | grep -c "Read-only file system"')).toBe('3');
    expect(await run(term, 'unshare -r id && echo ESCAPED || echo REFUSED')).toMatch(/REFUSED$/);
    expect(await run(term, 'unshare -m id && echo ESCAPED || echo REFUSED')).toMatch(/REFUSED$/);
    expect(await run(term, 'mkdir -p ~/m && mount -t tmpfs x ~/m && echo MOUNTED || echo REFUSED')).toMatch(/REFUSED$/);
    expect(await run(term, `ln -sf ${secrets} ~/s && cat ~/s >/dev/null && echo READ || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(term, 'cd / && cd .. && cd .. && ls /home')).toBe('mallory');
    // The host's terminals (every other session's) are not there: only this sandbox's own devpts.
    expect(await run(term, 'echo $(ls /dev/pts)')).toBe('ptmx');
    expect(await run(term, 'grep -c CapEff:.0000000000000000 /proc/self/status')).toBe('1');
    expect(await run(term, 'grep NoNewPrivs /proc/self/status')).toMatch(/NoNewPrivs:\s+1/);
    expect(await run(term, 'ls /sys /root /run 2>&1 | grep -c "No such file"')).toBe('3');
    // Nothing of the agent's open files came along (not the server's inherited descriptor 9): the terminal, and
    // ls's own directory handle.
    expect(await run(term, 'echo $(ls /proc/self/fd)')).toBe('0 1 2 3');
    await term.close();
    await other.term.close();
  });

  it("keeps admins as they were: a shell as the server's own account, outside the sandbox; demoted, they lose it", async () => {
    const { term } = await shellOf(base, admin);
    expect(await run(term, 'id -u')).toBe(String(NOBODY));
    expect(await run(term, `test -e /proc/${dev.pid} && echo SEEN || echo UNSEEN`)).toBe('SEEN');
    expect(await run(term, 'env')).not.toContain(SERVER_SECRET);
    await term.close();

    const second = await createUser(base, admin, 'erin', 'admin');
    const own = await shellOf(base, second.cookie);
    expect(await run(own.term, `test -e /proc/${dev.pid} && echo SEEN || echo UNSEEN`)).toBe('SEEN');
    expect((await api(base, 'PATCH', `/api/users/${second.id}`, { cookie: admin, body: { role: 'user' } })).status).toBe(200);
    expect((await own.term.closed).code).toBe(4403);
    // Reattaching to that shell is refused (403, with why); a new one is sandboxed.
    const reattach = await api(base, 'POST', '/api/terminal/start', { cookie: second.cookie, body: { terminal_cookie: 'main' } });
    expect(reattach.json.data.reattached).toBe(true);
    expect(await upgradeStatus(base, reattach.json.data.websocket_path as string, { cookie: second.cookie })).toBe(403);
    const sandboxed = await shellOf(base, second.cookie, 'fresh');
    expect(await run(sandboxed.term, `test -e /proc/${dev.pid} && echo SEEN || echo UNSEEN`)).toBe('UNSEEN');
    await sandboxed.term.close();
  });
});
