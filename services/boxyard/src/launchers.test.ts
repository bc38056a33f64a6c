// Every way the `boxyard` process is launched passes the V8 flags of services/boxyard/node-flags and
// MALLOC_ARENA_MAX=2 and MALLOC_MMAP_THRESHOLD_=65536 (why they matter:
// that file; issue 13's memory goal depends on them): `make run`, the image's wrapper and the host install's.
// The wrappers run for real, with a stand-in `node` that prints the arguments it was given.
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_FLAGS_FILE, readNodeFlags } from './node-flags.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
/** What the stand-in `node` prints first: the malloc settings it was started with. */
const MALLOC = 'MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=65536';

describe('boxyard launchers', () => {
  let dir: string;
  let flags: string[];
  /** A `node` that prints its arguments, one a line. */
  let fakeNode: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'boxyard-launchers-'));
    flags = readNodeFlags();
    fakeNode = join(dir, 'bin', 'node');
    await mkdir(join(dir, 'bin'));
    await writeFile(
      fakeNode,
      '#!/bin/sh\necho "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX MALLOC_MMAP_THRESHOLD_=$MALLOC_MMAP_THRESHOLD_"\necho "NODE_COMPILE_CACHE=$NODE_COMPILE_CACHE"\nprintf "%s\\n" "$@"\n',
    );
    await chmod(fakeNode, 0o755);
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('node-flags holds the young generation cap and the external memory accounting', () => {
    expect(flags).toContain('--max-semi-space-size=8');
    expect(flags).toContain('--external-memory-accounted-in-global-limit');
  });

  it("this Node accepts every one of them (V8 drops flags between versions: a launcher with one it doesn't know would not start)", async () => {
    const { stdout, stderr } = await run(process.execPath, [...flags, '-e', 'console.log(process.version)']);
    expect(stderr).toBe('');
    expect(stdout.trim()).toBe(process.version);
  });

  it('make run starts main.ts dev with the flags', async () => {
    const { stdout } = await run('make', ['-s', '-n', 'run'], { cwd: root });
    expect(stdout.trim().split('\n').at(-1)!.split(' ')).toEqual([
      'MALLOC_ARENA_MAX=2',
      'MALLOC_MMAP_THRESHOLD_=65536',
      'NODE_COMPILE_CACHE=.boxyard/compile-cache',
      'node',
      ...flags,
      'services/boxyard/src/main.ts',
      'dev',
    ]);
  });

  it("the host install's command (deploy/boxyard) passes them before main.ts and the user's arguments", async () => {
    const prefix = join(dir, 'opt');
    await mkdir(join(prefix, 'bin'), { recursive: true });
    await mkdir(join(prefix, 'node/bin'), { recursive: true });
    await mkdir(join(prefix, 'app/services/boxyard'), { recursive: true });
    await copyFile(join(root, 'deploy/boxyard'), join(prefix, 'bin/boxyard'));
    await copyFile(fakeNode, join(prefix, 'node/bin/node'));
    await copyFile(NODE_FLAGS_FILE, join(prefix, 'app/services/boxyard/node-flags'));
    await chmod(join(prefix, 'bin/boxyard'), 0o755);
    await chmod(join(prefix, 'node/bin/node'), 0o755);
    const { stdout, stderr } = await run(join(prefix, 'bin/boxyard'), ['serve', 'all', '--config', 'with space.yaml'], { env: { PATH: '/usr/bin:/bin' } });
    expect(stderr).toBe('');
    expect(stdout.trim().split('\n')).toEqual([
      MALLOC,
      'NODE_COMPILE_CACHE=',
      ...flags,
      join(prefix, 'app/services/boxyard/src/main.ts'),
      'serve',
      'all',
      '--config',
      'with space.yaml',
    ]);
    // Under systemd (StateDirectory=boxyard): Node's compile cache goes into the state directory.
    const underSystemd = await run(join(prefix, 'bin/boxyard'), ['serve', 'all'], { env: { PATH: '/usr/bin:/bin', STATE_DIRECTORY: '/var/lib/boxyard' } });
    expect(underSystemd.stdout.trim().split('\n')[1]).toBe('NODE_COMPILE_CACHE=/var/lib/boxyard/compile-cache');
  });

  it("the image's wrapper (services/boxyard/bin/boxyard, app at /app) passes them too", async () => {
    // The same script with /app pointing at a scratch copy (this machine has no /app).
    const app = join(dir, 'app');
    await mkdir(join(app, 'services/boxyard'), { recursive: true });
    await copyFile(NODE_FLAGS_FILE, join(app, 'services/boxyard/node-flags'));
    const wrapper = join(dir, 'boxyard');
    await writeFile(wrapper, (await readFile(join(root, 'services/boxyard/bin/boxyard'), 'utf8')).replaceAll('/app/', `${app}/`));
    await chmod(wrapper, 0o755);
    const { stdout, stderr } = await run(wrapper, ['terminal-agent'], { env: { PATH: `${join(dir, 'bin')}:/usr/bin:/bin` } });
    expect(stderr).toBe('');
    expect(stdout.trim().split('\n')).toEqual([MALLOC, 'NODE_COMPILE_CACHE=', ...flags, join(app, 'services/boxyard/src/main.ts'), 'terminal-agent']);
  });
});
