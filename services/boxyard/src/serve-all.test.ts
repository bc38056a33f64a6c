// `boxyard serve all --config FILE` as a host runs it: a child process reading one YAML file, with the run's
// PostgreSQL (external) or its own (embedded); config mistakes end with exit 2 naming the key; and the host install
// itself: deploy/install.sh into a temporary prefix, the systemd unit checked by systemd-analyze against that
// install, and the installed command run as an unprivileged user without capabilities, as the unit runs it.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { createTestBucket, createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { serviceDefinition as boxRepository } from '@boxyard/box-repository';
import { devInstallation, loadHostConfig } from './host-config.ts';
import { checkServiceConfigs } from './run-all.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = join(root, 'services/boxyard/src/main.ts');
const ALL = ['box-repository', 'file-share', 'terminal', 'second-service'];

/** GET `url`, self-signed certificates accepted (the second service's): the status code. */
function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, { rejectUnauthorized: false, timeout: 10_000 }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject).end();
  });
}

interface Served {
  child: ChildProcess;
  output: () => string;
  /** The URL each started service printed. */
  urls: Record<string, string>;
  /** SIGTERM, as systemd stops it; the exit code. */
  stop(): Promise<number | null>;
}

/** Every child started, stopped at the end even when a test failed half-way. */
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM'); // it stops its PostgreSQL too
});

/** Runs `command serve all --config file` and waits for `Ready.` (or its exit, which fails the test). */
async function serveAll(command: string[], file: string, env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(command[0]!, [...command.slice(1), 'serve', 'all', '--config', file], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => output.includes('\nReady.') && (clearInterval(timer), resolve()), 100);
    void exited.then((code) => (clearInterval(timer), reject(new Error(`boxyard serve all exited with ${code}:\n${output}`))));
  });
  // The services' public URLs (their `<service>-metrics` listeners are printed too, and left out here).
  const urls = Object.fromEntries(
    [...output.matchAll(/^ {2}([a-z-]+) +(https?:\/\/\S+)$/gm)].filter((m) => !m[1]!.endsWith('-metrics')).map((m) => [m[1]!, m[2]!]),
  );
  return {
    child,
    output: () => output,
    urls,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs a command that should fail at once: its exit code and stderr. */
async function failing(file: string, env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  const result = await run(process.execPath, [cli, 'serve', 'all', '--config', file], { env: { PATH: process.env.PATH ?? '', ...env } }).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number | null; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
  return result;
}

async function signIn(base: string, password: string): Promise<number> {
  const response = await fetch(`${base}/api/auth/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  return response.status;
}

/** The embedded PostgreSQL's postmaster (first line of postmaster.pid) and its real uid. */
async function postmaster(dataDir: string): Promise<{ pid: number; uid: number }> {
  const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const uid = Number(/^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return { pid, uid };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A temporary directory that another user (`postgres`, `nobody`) can traverse: under /var/tmp, 0755. */
async function reachableTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join('/var/tmp', prefix));
  await chmod(dir, 0o755);
  return dir;
}

const yaml = (value: unknown) => JSON.stringify(value, null, 2); // JSON is YAML
/** The output's JSON log records. */
const logLines = (output: string) => output.split('\n').filter((line) => line.startsWith('{"level":'));

describe('boxyard serve all', () => {
  const cleanup: string[] = [];
  afterAll(async () => {
    for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
  });

  it('runs every service from one file with an external PostgreSQL: ports, public URL and S3 storage from the file, a service left out, the admin signs in', async () => {
    const dir = await reachableTempDir('boxyard-serve-');
    cleanup.push(dir);
    const bucket = await createTestBucket('serveall');
    await writeFile(join(dir, 's3-secret-key'), `${bucket.secretKey}\n`, { mode: 0o600 });
    const filesPort = await freePort();
    const file = join(dir, 'boxyard.yaml');
    await writeFile(
      file,
      yaml({
        home: join(dir, 'home'),
        database: { url: await createTestDatabase('serveall') },
        services: {
          'box-repository': {
            server: { port: 0 },
            storage: {
              driver: 's3',
              endpoint: bucket.endpoint,
              access_key: bucket.accessKey,
              secret_key_file: join(dir, 's3-secret-key'),
              bucket: bucket.bucket,
            },
          },
          'file-share': { server: { port: filesPort, public_url: 'https://files.example.test' }, metrics: { port: 0 } },
          terminal: { server: { port: 0 } },
          'second-service': false,
        },
      }),
    );

    const first = await serveAll([process.execPath, cli], file);
    let password: string;
    try {
      expect(first.output()).toContain(`boxyard serve all: state in ${join(dir, 'home')}`);
      expect(first.output()).toMatch(/postgres +127\.0\.0\.1:\d+ \(external\)/);
      expect(Object.keys(first.urls).sort()).toEqual(['box-repository', 'file-share', 'terminal']);
      expect(first.urls['file-share']).toBe('https://files.example.test');
      for (const url of [first.urls['box-repository']!, `http://127.0.0.1:${filesPort}`, first.urls.terminal!]) {
        expect(await status(`${url}/health/ready`), url).toBe(200);
      }
      // The box repository's readiness checks its storage: 200 means the bucket answered the key from secret_key_file.
      // The admin's password: generated, printed once, kept with the other secrets.
      password = /user "admin", password (\S+) \(generated now, shown once/.exec(first.output())?.[1] ?? '';
      expect(password).not.toBe('');
      expect(await signIn(first.urls['box-repository']!, password)).toBe(200);
      expect(await signIn(first.urls['box-repository']!, `${password}x`)).toBe(401);
    } finally {
      expect(await first.stop()).toBe(0);
    }
    expect(first.output()).toContain('boxyard serve all: stopped');
    expect(JSON.parse(await readFile(join(dir, 'home', 'secrets.json'), 'utf8')).admin_password).toBe(password);

    // Its stdout is a pipe here: log records are JSON lines, as a log pipeline reads them.
    expect(logLines(first.output()).length).toBeGreaterThan(0);
    expect(logLines(first.output()).every((line) => typeof JSON.parse(line).msg === 'string')).toBe(true);

    // A second start: the same admin, the password no longer printed; with the readable lines a terminal gets.
    const second = await serveAll([process.execPath, cli], file, { BOXYARD_LOG_FORMAT: 'pretty' });
    try {
      expect(second.output()).not.toContain(password);
      expect(second.output()).toContain('password kept in');
      expect(await signIn(second.urls['box-repository']!, password)).toBe(200);
    } finally {
      await second.stop();
    }
    expect(logLines(second.output())).toEqual([]);
    expect(second.output()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: box-repository: request \{.*"method":"POST".*"status":200/m);
  }, 120_000);

  it('accepts the example deploy/boxyard.yaml as shipped and with the examples under `services` uncommented', async () => {
    const dir = await mkdtemp(join('/tmp', 'boxyard-example-'));
    cleanup.push(dir);
    const example = join(root, 'deploy/boxyard.yaml');
    const shipped = loadHostConfig(example);
    expect(shipped).toMatchObject({ database: { embedded: { port: 15432 } }, services: Object.fromEntries(ALL.map((name) => [name, {}])) });
    await checkServiceConfigs({ ...shipped, home: join(dir, 'home') });

    // `# key: value` lines below `services:` become keys; the credentials they name are files here.
    const text = await readFile(example, 'utf8');
    const at = text.indexOf('\nservices:');
    const uncommented = text.slice(0, at) + text.slice(at).replace(/^( *)# ( *[a-z_]+:(?: |$).*)$/gm, '$1$2');
    await writeFile(join(dir, 's3-secret-key'), 'example-secret\n');
    await writeFile(join(dir, 'boxyard.yaml'), uncommented.replaceAll('/run/credentials/boxyard.service/', `${dir}/`));
    const full = loadHostConfig(join(dir, 'boxyard.yaml'));
    expect(full.services?.['box-repository']).toMatchObject({
      server: { public_url: 'https://boxes.example.com' },
      storage: { driver: 's3', secret_key_file: `${dir}/s3-secret-key` },
    });
    expect(full.services?.['second-service']).toMatchObject({ server: { port: 8099 } });
    await checkServiceConfigs({ ...full, home: join(dir, 'home') });

    // No --config and no default file: every default, the state in systemd's StateDirectory.
    const saved = process.env.STATE_DIRECTORY;
    process.env.STATE_DIRECTORY = '/var/lib/boxyard-test-state';
    try {
      expect(loadHostConfig(join(dir, 'absent.yaml'), { missingOk: true })).toEqual({
        home: '/var/lib/boxyard-test-state',
        database: { embedded: { port: 15432 } },
        services: {},
      });
    } finally {
      if (saved === undefined) delete process.env.STATE_DIRECTORY;
      else process.env.STATE_DIRECTORY = saved;
    }
  });

  it("the box repository's sign-up: invited on a host install (deploy/boxyard.yaml), open under boxyard dev (make run)", async () => {
    const dir = await mkdtemp(join('/tmp', 'boxyard-sign-up-'));
    cleanup.push(dir);
    const signUpOf = async (installation: { services?: Record<string, unknown> }) => {
      const overrides = (installation.services?.['box-repository'] ?? {}) as Record<string, unknown>;
      const config = await boxRepository.devConfig({
        home: dir,
        databaseUrl: 'postgres://check@127.0.0.1/boxyard',
        secret: async () => 'x'.repeat(43),
        adminPassword: undefined,
        overrides,
      });
      return (config as unknown as { auth: { sign_up: string } }).auth.sign_up;
    };
    expect(await signUpOf(loadHostConfig(join(root, 'deploy/boxyard.yaml')))).toBe('invited');
    expect(await signUpOf(devInstallation())).toBe('open');
  });

  it('refuses a mistake in the file with exit 2 and a line naming the key, before starting anything', async () => {
    const dir = await mkdtemp(join('/tmp', 'boxyard-serve-bad-'));
    cleanup.push(dir);
    // No PostgreSQL listens here: the check comes first, so the database is never reached.
    const database = { url: 'postgres://nobody@127.0.0.1:1/none' };
    const cases: [unknown, RegExp][] = [
      [{ database, colour: 'blue' }, /config: \(root\): Unrecognized key: "colour"/],
      [{ database, services: { 'box-repo': {} } }, /config: services: Unrecognized key: "box-repo"/],
      [{ database, home: 'relative/home' }, /config: home: must be an absolute path/],
      [{ database: { url: 'mysql://x' } }, /config: database\.url: must be a postgres:\/\/ URL/],
      [{ database: { url: database.url, embedded: {} } }, /config: database: either url \(external\) or embedded, not both/],
      [{ database, services: { terminal: { server: { prot: 3002 } } } }, /config: services\.terminal\.server: Unrecognized key: "prot"/],
      [{ database, services: { 'file-share': { server: { port: 70000 } } } }, /config: services\.file-share\.server\.port: Too big/],
      [{ database, services: { terminal: 'off' } }, /config: services\.terminal: must be false, true or a mapping/],
    ];
    for (const [index, [config, message]] of cases.entries()) {
      const file = join(dir, `case-${index}.yaml`);
      await writeFile(file, yaml({ home: join(dir, 'home'), ...(config as object) }));
      const { code, stderr } = await failing(file);
      expect({ code, stderr }).toMatchObject({ code: 2, stderr: expect.stringMatching(message) });
      expect(stderr).not.toMatch(/^[ \t]+at /m); // no stack trace
    }
    // BOXYARD_HOME overrides `home` and must be absolute as well; an explicit --config that is missing is an error.
    await writeFile(join(dir, 'ok.yaml'), yaml({ database }));
    expect(await failing(join(dir, 'ok.yaml'), { BOXYARD_HOME: 'rel' })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/config: BOXYARD_HOME: must be an absolute path/),
    });
    expect(await failing(join(dir, 'missing.yaml'))).toMatchObject({ code: 2, stderr: expect.stringMatching(/cannot read .*missing\.yaml \(ENOENT\)/) });
    expect(await failing(join(dir, 'ok.yaml'), { BOXYARD_LOG_FORMAT: 'text' })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/BOXYARD_LOG_FORMAT must be "json" or "pretty"/),
    });
  }, 120_000);

  it('starts its own PostgreSQL with `database: {embedded: {port}}` (as root: as the postgres user) and stops it on SIGTERM', async () => {
    const dir = await reachableTempDir('boxyard-serve-embedded-');
    cleanup.push(dir);
    const port = await freePort();
    const file = join(dir, 'boxyard.yaml');
    await writeFile(
      file,
      yaml({ home: join(dir, 'home'), database: { embedded: { port } }, services: Object.fromEntries(ALL.map((name) => [name, { server: { port: 0 } }])) }),
    );
    const served = await serveAll([process.execPath, cli], file, { BOXYARD_ADMIN_PASSWORD: 'Serve-All-Admin-42!' });
    let pg: { pid: number; uid: number };
    try {
      expect(served.output()).toMatch(new RegExp(`postgres +\\S+ on 127\\.0\\.0\\.1:${port} \\(embedded`));
      expect(served.output()).toContain('password from BOXYARD_ADMIN_PASSWORD');
      expect(Object.keys(served.urls).sort()).toEqual([...ALL].sort());
      for (const url of Object.values(served.urls)) expect(await status(`${url}/health/ready`), url).toBe(200);
      expect(await signIn(served.urls['box-repository']!, 'Serve-All-Admin-42!')).toBe(200);
      pg = await postmaster(join(dir, 'home', 'postgres'));
      const expectedUid = process.getuid?.() === 0 ? Number((await run('id', ['-u', 'postgres'])).stdout.trim()) : process.getuid?.();
      expect(pg.uid).toBe(expectedUid);
    } finally {
      expect(await served.stop()).toBe(0);
    }
    expect(alive(pg.pid)).toBe(false);
  }, 120_000);
});

describe('host install (deploy/)', () => {
  let prefix: string;
  beforeAll(async () => {
    // The real script into a temporary prefix (warm npm cache: about 25 s; node-pty compiles).
    prefix = join(await reachableTempDir('boxyard-install-'), 'opt');
    await run(join(root, 'deploy/install.sh'), [prefix], { env: { ...process.env }, timeout: 240_000 });
  }, 300_000);
  afterAll(async () => {
    if (prefix) await rm(join(prefix, '..'), { recursive: true, force: true });
  });

  it('installs Node 24, the app and the command, reachable through a symlink', async () => {
    const link = join(prefix, '..', 'boxyard');
    await run('ln', ['-s', join(prefix, 'bin/boxyard'), link]);
    expect((await run(link, ['--help'])).stdout).toContain('serve all [--config FILE]');
    expect((await run(join(prefix, 'node/bin/node'), ['--version'])).stdout).toMatch(/^v24\./);
    // Production packages only, no tests; everything readable by others, writable only by the owner.
    await expect(stat(join(prefix, 'app/node_modules/vitest'))).rejects.toThrow();
    await expect(stat(join(prefix, 'app/services/boxyard/src/serve-all.test.ts'))).rejects.toThrow();
    const mode = (await stat(join(prefix, 'app/services/boxyard/src/run-all.ts'))).mode;
    expect([mode & 0o444, mode & 0o022]).toEqual([0o444, 0]);
    // A second run is an upgrade: the same prefix is accepted; a foreign non-empty directory is not.
    const foreign = await reachableTempDir('boxyard-foreign-');
    await writeFile(join(foreign, 'keep'), 'x');
    const refused = await run(join(root, 'deploy/install.sh'), [foreign]).catch((error: { code: number; stderr: string }) => error);
    await rm(foreign, { recursive: true, force: true });
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('neither empty nor an earlier Boxyard install') });
  });

  /** The unit with its paths pointing at this install instead of /opt/boxyard. */
  async function unitFor(install: string, edit: (text: string) => string = (t) => t): Promise<string> {
    const dir = await mkdtemp(join(prefix, '..', 'unit-')); // removed with the install
    const unit = join(dir, 'boxyard.service');
    await writeFile(unit, edit((await readFile(join(root, 'deploy/systemd/boxyard.service'), 'utf8')).replaceAll('/opt/boxyard', install)));
    return unit;
  }

  it('systemd-analyze verify accepts the unit without a warning (and does warn about a misspelled option)', async () => {
    const unit = await unitFor(prefix);
    const verify = async (file: string) =>
      run('systemd-analyze', ['verify', file]).then(
        (r) => ({ code: 0, stderr: r.stderr }),
        (e: { code: number; stderr: string }) => e,
      );
    const good = await verify(unit);
    expect(good.code).toBe(0);
    expect(good.stderr.split('\n').filter((line) => line.includes('boxyard.service'))).toEqual([]);
    // The check above is worth something: a typo is reported (verify still exits 0, hence the stderr check).
    const typo = await verify(await unitFor(prefix, (t) => t.replace('ProtectHome=yes', 'ProtectHomes=yes')));
    expect(typo.stderr).toMatch(/boxyard\.service:\d+: Unknown key 'ProtectHomes'/);
    // A missing ExecStart binary is reported too.
    const missing = await verify(await unitFor(join(prefix, 'nowhere')));
    expect(missing.code).not.toBe(0);
  });

  it("systemd-analyze security rates the unit's exposure OK (at most 2.0 of 10)", async () => {
    const { stdout } = await run('systemd-analyze', ['security', '--offline=yes', await unitFor(prefix)]);
    const level = Number(/Overall exposure level for boxyard\.service: ([\d.]+)/.exec(stdout)?.[1]);
    expect(level).toBeLessThanOrEqual(2);
    expect(stdout).toMatch(/✓ CapabilityBoundingSet=~CAP_SET\(UID\|GID\|PCAP\)/);
    expect(stdout).toMatch(/✗ MemoryDenyWriteExecute=/); // on purpose: V8's JIT
  });

  it('the installed command runs as an unprivileged user with no capabilities and no new privileges (as the unit runs it): the embedded PostgreSQL runs as that user and owns its data', async () => {
    // `nobody` stands for the unit's dynamic user (which nss-systemd names under systemd; initdb needs a name).
    const nobody = { uid: Number((await run('id', ['-u', 'nobody'])).stdout.trim()), gid: Number((await run('id', ['-g', 'nobody'])).stdout.trim()) };
    const dir = await reachableTempDir('boxyard-unprivileged-');
    const home = join(dir, 'state');
    await run('install', ['-d', '-m', '0700', '-o', String(nobody.uid), '-g', String(nobody.gid), home]); // StateDirectory, 0700
    const port = await freePort();
    const file = join(dir, 'boxyard.yaml');
    await writeFile(file, yaml({ home, database: { embedded: { port } }, services: Object.fromEntries(ALL.map((name) => [name, { server: { port: 0 } }])) }));
    await chmod(file, 0o644);
    const setpriv = ['setpriv', `--reuid=${nobody.uid}`, `--regid=${nobody.gid}`, '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all'];
    const served = await serveAll([...setpriv, join(prefix, 'bin/boxyard')], file, { BOXYARD_ADMIN_PASSWORD: 'Serve-All-Admin-42!' });
    let pg: { pid: number; uid: number };
    try {
      for (const url of Object.values(served.urls)) expect(await status(`${url}/health/ready`), url).toBe(200);
      expect(await signIn(served.urls['box-repository']!, 'Serve-All-Admin-42!')).toBe(200);
      pg = await postmaster(join(home, 'postgres'));
      expect(pg.uid).toBe(nobody.uid);
      expect((await stat(join(home, 'postgres'))).uid).toBe(nobody.uid);
      expect((await stat(join(home, 'secrets.json'))).mode & 0o077).toBe(0);
    } finally {
      expect(await served.stop()).toBe(0);
    }
    expect(alive(pg.pid)).toBe(false);
    await rm(dir, { recursive: true, force: true });
  }, 120_000);
});
