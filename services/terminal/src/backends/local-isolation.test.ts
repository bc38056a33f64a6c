// Who a local shell runs as, tried for real on this (root) machine:
// - a root server (`boxyard dev`, the real state directory): each terminal user's shell is an OS account of its
//   own; it cannot read the server's secrets.json nor another user's files, and its environment has no server
//   secret;
// - a server running as `nobody` (setpriv): it cannot switch users, so a non-admin is refused with a message that
//   says why, the admin gets a shell (as the server's account, clean environment), and an attached admin who is
//   demoted loses the socket (4403).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, link, mkdtemp, readFile, rm, stat, writeFile, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevProcess, type DevProcess } from '@boxyard/test/harness/dev-process.ts';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { freePort, waitForHttp } from '@boxyard/test/harness/ports.ts';
import { api, createUser, login, openTerminal, removeTestAccounts, upgradeStatus, type TerminalClient } from '../testing/test-gateway.ts';

const root = process.getuid?.() === 0;
const MAIN = new URL('../../../boxyard/src/main.ts', import.meta.url).pathname;
/**
 * Whether `nobody` can read the sources it must run: not in a checkout inside a private directory (a `mktemp -d`
 * clone, /root), where the server as nobody could not even load its first module; that case is skipped, named.
 */
const sourcesReadableByNobody = root && spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', 'test', '-r', MAIN]).status === 0;

async function shellOf(base: string, cookie: string, terminalCookie = 'main'): Promise<TerminalClient> {
  const started = await api(base, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: terminalCookie } });
  expect(started.status, JSON.stringify(started.json)).toBe(200);
  return openTerminal(base, started.json.data.websocket_path as string, { cookie });
}

/** Runs a command line in the shell and returns what it printed between two markers. */
async function run(term: TerminalClient, command: string): Promise<string> {
  const tag = randomBytes(4).toString('hex');
  // The quotes keep the echoed command line from matching the markers.
  term.type(`echo B""${tag}; ${command} 2>&1; echo E""${tag}\r`);
  const out = await term.waitFor(new RegExp(`^E${tag}$`, 'm'));
  return out.slice(out.lastIndexOf(`\nB${tag}\n`) + tag.length + 3, out.lastIndexOf(`\nE${tag}`)).trim();
}

describe.runIf(root)('local backend, root server: a separate OS account per terminal user', () => {
  let dev: DevProcess;
  let base: string;
  const prefix = `bxi${randomBytes(3).toString('hex')}-`;
  const homeBase = `/var/tmp/boxyard-test-homes/${prefix}`;

  beforeAll(async () => {
    dev = await startDevProcess({
      env: {
        BOXYARD_ADMIN_PASSWORD: 'Isolation-Admin-42',
        BOXYARD_BACKEND__LOCAL__ACCOUNTS__PREFIX: prefix,
        BOXYARD_BACKEND__LOCAL__ACCOUNTS__HOME_BASE: homeBase,
      },
    });
    base = dev.urls.terminal!;
  });
  afterAll(async () => {
    await dev?.stop({ discard: true });
    removeTestAccounts(prefix, homeBase);
  });

  it("keeps the server's state private: home 0711, secrets.json 0600, each entry but PostgreSQL's data 0700", async () => {
    expect((await stat(dev.home)).mode & 0o777).toBe(0o711);
    expect((await stat(join(dev.home, 'secrets.json'))).mode & 0o777).toBe(0o600);
    for (const entry of ['terminal', 'file-share', 'box-repository']) {
      expect((await stat(join(dev.home, entry))).mode & 0o077, entry).toBe(0);
    }
  });

  it("runs A's and B's shells as two accounts that read neither the server's secrets nor each other's files", async () => {
    const admin = await login(base, 'admin', 'Isolation-Admin-42');
    const alice = await createUser(base, admin, 'alice');
    const bob = await createUser(base, admin, 'bob');
    const a = await shellOf(base, alice.cookie);
    const b = await shellOf(base, bob.cookie);
    const uidA = await run(a, 'id -u');
    const uidB = await run(b, 'id -u');
    expect(uidA).toMatch(/^\d+$/);
    expect(uidA).not.toBe('0');
    expect(uidB).not.toBe('0');
    expect(uidA).not.toBe(uidB);
    expect(await run(a, 'id -un')).toBe(`${prefix}${alice.id.replace(/-/g, '').slice(0, 12)}`);

    // The server's secrets (every session key, the database password): not readable, not even listable.
    const secrets = join(dev.home, 'secrets.json');
    expect(await run(a, `cat ${secrets} >/dev/null && echo READ || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a, `ls ${dev.home} >/dev/null && echo LISTED || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a, `cat ${join(dev.home, 'terminal', 'agents')}/*.log >/dev/null && echo READ || echo REFUSED`)).toMatch(/REFUSED$/);

    // Bob's home is his: Alice can't read a file in it.
    const bobHome = await run(b, 'echo $HOME');
    expect(bobHome).toBe(join(homeBase, `${prefix}${bob.id.replace(/-/g, '').slice(0, 12)}`));
    await run(b, 'echo bob-private > ~/note.txt');
    expect(await run(a, `cat ${bobHome}/note.txt >/dev/null && echo READ || echo REFUSED`)).toMatch(/REFUSED$/);
    // Nor can she signal or read Bob's shell's process.
    const bobShell = await run(b, 'echo $$');
    expect(await run(a, `cat /proc/${bobShell}/environ >/dev/null && echo READ || echo REFUSED`)).toMatch(/REFUSED$/);
    expect(await run(a, `kill -0 ${bobShell} && echo SIGNALLED || echo REFUSED`)).toMatch(/REFUSED$/);

    // No server secret in the environment.
    const values = Object.values(JSON.parse(await readFile(secrets, 'utf8')) as Record<string, string>);
    const env = await run(a, 'env');
    for (const value of values) expect(env).not.toContain(value);
    expect(env).not.toMatch(/DATABASE|BOXYARD_|postgres:\/\//);
    await a.close();
    await b.close();
  });
});

/** `boxyard serve terminal` as `nobody`: no root, no capabilities. */
async function serveAsNobody(databaseUrl: string): Promise<{ base: string; stop(): Promise<void>; output(): string }> {
  const dir = await mkdtemp('/var/tmp/boxyard-nobody-');
  await chmod(dir, 0o755);
  // nobody can't reach /root/.cache: its own link (or copy) of this Node binary.
  const node = join(dir, 'node');
  await link(process.execPath, node).catch(() => copyFile(process.execPath, node));
  await chmod(node, 0o755);
  const port = await freePort();
  const config = join(dir, 'terminal.yaml');
  await writeFile(
    config,
    JSON.stringify({
      server: { host: '127.0.0.1', port },
      logging: { level: 'warn' },
      database: { url: databaseUrl },
      rate_limiting: { max_requests: 100_000 },
      session: { secret: randomBytes(32).toString('base64url') },
      admin: { password: 'Nobody-Admin-42' },
    }),
  );
  await chmod(config, 0o644);
  const nobody = { uid: 65534, gid: 65534 };
  let text = '';
  const child: ChildProcess = spawn(
    'setpriv',
    [
      `--reuid=${nobody.uid}`,
      `--regid=${nobody.gid}`,
      '--clear-groups',
      '--no-new-privs',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--',
      node,
      MAIN,
      'serve',
      'terminal',
      '--config',
      config,
    ],
    // A secret in the server's environment, to look for in the shell's.
    { env: { PATH: process.env.PATH, HOME: dir, SERVER_ONLY_SECRET: 'do-not-leak-4f1c' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/health`, 60_000).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`${String(error)}\n${text}`);
  });
  return {
    base,
    output: () => text,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe.runIf(sourcesReadableByNobody)(
  'local backend, server that cannot switch users (running as nobody; skipped where nobody cannot read the checkout)',
  () => {
    let server: Awaited<ReturnType<typeof serveAsNobody>>;
    beforeAll(async () => {
      server = await serveAsNobody(await createTestDatabase('terminal_nobody'));
    });
    afterAll(() => server?.stop());

    it('refuses a non-admin with a message saying why (403, service shape); the admin gets a clean shell as the server', async () => {
      const admin = await login(server.base, 'admin', 'Nobody-Admin-42');
      const user = await createUser(server.base, admin, 'carol');
      const refused = await api(server.base, 'POST', '/api/terminal/start', { cookie: user.cookie, body: { terminal_cookie: 'main' } });
      expect(refused.status).toBe(403);
      expect(refused.json).toEqual({
        success: false,
        message: expect.stringContaining('Terminals are for admins only on this server'),
        details: expect.any(String),
      });
      expect(refused.json.message).toContain('runs as the unprivileged OS user "nobody" (uid 65534)');
      expect(refused.json.message).toContain('could read its secrets');

      const term = await shellOf(server.base, admin);
      expect(await run(term, 'id -u')).toBe('65534');
      const env = await run(term, 'env');
      expect(env).not.toContain('do-not-leak-4f1c');
      expect(env).not.toMatch(/DATABASE|BOXYARD_|postgres:\/\//);
      await term.close();
    });

    it("closes a demoted admin's socket with 4403 and refuses the upgrade afterwards", async () => {
      const admin = await login(server.base, 'admin', 'Nobody-Admin-42');
      const second = await createUser(server.base, admin, 'dave', 'admin');
      const term = await shellOf(server.base, second.cookie);
      await run(term, 'true');
      expect((await api(server.base, 'PATCH', `/api/users/${second.id}`, { cookie: admin, body: { role: 'user' } })).status).toBe(200);
      expect(await term.closed).toEqual({ code: 4403, reason: 'access withdrawn' });
      expect(term.controls.at(-1)).toMatchObject({ type: 'error', message: expect.stringContaining('Terminals are for admins only') });
      expect(await upgradeStatus(server.base, new URL(term.socket.url).pathname, { cookie: second.cookie })).toBe(403);
    });
  },
);
