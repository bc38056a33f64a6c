// The local backend's socket directory against a hostile local user (issue 27): its default lives in the shared temp
// directory under a fixed name, so anyone can put a symlink, a file or a directory of their own there before the
// server starts. As root, following that symlink would `chmod 0700` a directory of the planter's choice and put the
// agents' sockets and logs in it. What is planted is never followed nor changed: the default moves to a fresh
// private directory; a configured `socket_dir` that is not a plain directory of ours is refused with its key named.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend, defaultSocketDir } from './local.ts';
import type { SessionBackend } from './types.ts';

const root = process.getuid?.() === 0;
const nobody = root
  ? { uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })) }
  : undefined;
/** As another local user planted it (as root); as ourselves otherwise (what is checked then is the symlink itself). */
const plantedByNobody = (path: string) => nobody && lchownSync(path, nobody.uid, nobody.gid);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('local backend: the socket directory', () => {
  /** Stands for /tmp: world-writable and sticky. */
  let shared: string;
  /** Directories the planter wants changed: root's, 0755, with content. */
  const victims: string[] = [];
  let savedTmpdir: string | undefined;
  const warnings: string[] = [];
  const backends: SessionBackend[] = [];

  const backend = (socketDir?: string) => {
    const created = createLocalBackend({
      shell: '/bin/sh',
      socketDir,
      accounts: { prefix: 'boxyard-sd-', home_base: '/var/tmp/boxyard-sd-homes', map: {} },
      ability: { canSwitch: false, canCreate: false, self: { name: 'test', uid: process.getuid?.() ?? 0 } },
      log: { info: () => {}, warn: (m) => void (m.includes('cannot switch users') || warnings.push(m)) },
      warmAgents: 1,
    });
    backends.push(created);
    return created;
  };

  /** Where the backend's spare agent writes its log: the directory it really uses. */
  const directoryInUse = async (created: SessionBackend): Promise<string> => {
    for (let i = 0; i < 200 && created.warmAgents!().length === 0; i++) await sleep(50);
    const pid = created.warmAgents!()[0];
    expect(pid, 'a spare agent started').toBeDefined();
    const log = execFileSync('readlink', [`/proc/${pid}/fd/2`], { encoding: 'utf8' }).trim();
    return join(log, '..');
  };

  beforeAll(() => {
    shared = mkdtempSync('/var/tmp/boxyard-shared-tmp-');
    chmodSync(shared, 0o1777);
    savedTmpdir = process.env.TMPDIR;
    process.env.TMPDIR = shared;
  });

  afterEach(async () => {
    await Promise.all(backends.splice(0).map((b) => b.close()));
    warnings.length = 0;
    for (const entry of readdirSync(shared)) rmSync(join(shared, entry), { recursive: true, force: true });
    for (const victim of victims.splice(0)) rmSync(victim, { recursive: true, force: true });
  });

  afterAll(() => {
    if (savedTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmpdir;
    rmSync(shared, { recursive: true, force: true });
  });

  const makeVictim = () => {
    const victim = mkdtempSync('/var/tmp/boxyard-victim-');
    victims.push(victim);
    chmodSync(victim, 0o755);
    writeFileSync(join(victim, 'keep'), 'x');
    return victim;
  };

  it('a symlink planted at the default path: the directory it points at keeps its mode and gets nothing; a fresh private directory is used', async () => {
    const target = makeVictim();
    const planted = defaultSocketDir();
    expect(planted.startsWith(`${shared}/`)).toBe(true);
    symlinkSync(target, planted);
    plantedByNobody(planted);

    const created = backend();
    const used = await directoryInUse(created);

    expect(statSync(target).mode & 0o7777).toBe(0o755);
    expect(readdirSync(target)).toEqual(['keep']);
    expect(lstatSync(planted).isSymbolicLink()).toBe(true); // left as it was
    expect(used).not.toBe(planted);
    const info = lstatSync(used);
    expect({ directory: info.isDirectory(), uid: info.uid, mode: info.mode & 0o777 }).toEqual({ directory: true, uid: process.getuid?.(), mode: 0o700 });
    expect(warnings.join('\n')).toMatch(/is a symbolic link/);
  });

  it.skipIf(!root)("a directory of another user's at the default path is neither used nor changed", async () => {
    const planted = defaultSocketDir();
    mkdirSync(planted, { mode: 0o777 });
    chmodSync(planted, 0o777);
    chownSync(planted, nobody!.uid, nobody!.gid);

    const used = await directoryInUse(backend());

    expect(used).not.toBe(planted);
    expect(statSync(planted).uid).toBe(nobody!.uid);
    expect(statSync(planted).mode & 0o777).toBe(0o777);
    expect(readdirSync(planted)).toEqual([]);
    expect(warnings.join('\n')).toMatch(/belongs to another user/);
  });

  it('a file at the default path is left alone too', async () => {
    const planted = defaultSocketDir();
    writeFileSync(planted, 'not a directory');
    const used = await directoryInUse(backend());
    expect(used).not.toBe(planted);
    expect(lstatSync(planted).isFile()).toBe(true);
  });

  it('the default path free, or already ours: used as it is and made private (reattach after a restart finds the same sockets)', async () => {
    const path = defaultSocketDir();
    mkdirSync(path, { mode: 0o755 });
    chmodSync(path, 0o755);
    expect(await directoryInUse(backend())).toBe(path);
    expect(statSync(path).mode & 0o777).toBe(0o700);
    await Promise.all(backends.splice(0).map((b) => b.close()));
    expect(await directoryInUse(backend())).toBe(path);
    expect(warnings).toEqual([]);
  });

  it('a configured socket_dir that is a symlink is refused with the key named, and what it points at is unchanged', () => {
    const target = makeVictim();
    const link = join(shared, 'agents');
    symlinkSync(target, link);
    plantedByNobody(link);
    expect(() => backend(link)).toThrow(/backend\.local\.socket_dir: .*agents is a symbolic link/);
    expect(statSync(target).mode & 0o7777).toBe(0o755);
    expect(existsSync(join(target, 'compile-cache'))).toBe(false);
  });
});
