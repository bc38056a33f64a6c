// The cluster walkthrough of docs/kubernetes.md ("By hand"), run as the script it is: its blocks are read from the
// file itself (after the `<!-- walkthrough: up -->` and `<!-- walkthrough: down -->` markers), so the guide and this
// test cannot drift. The reader's part is done the reader's way: `make cluster` (the block's first line), then a
// PostgreSQL and a MinIO on the node address (the embedded PostgreSQL and the cached MinIO, as `make demo` does),
// then the rest of the block with DB_URL, PG_PORT, S3_PORT, S3_ACCESS_KEY and S3_SECRET_KEY set. It ends the way
// the block does: a box it published added with `vagrant box add`, `wget --mirror` with the admin's credentials,
// and a shell through the terminal page, in Chromium. Then the down block, and nothing of either cluster cycle of
// the file (the real-cluster suite's and this one) left on the host.
// Registered by real-cluster.test.ts after its own suite, so the two never hold the one node at once.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type RunningPostgres } from 'boxyard/src/embedded-postgres.ts';
import { startMinio, type RunningMinio } from '../harness/minio.ts';
import { NODE } from '../harness/node/network.ts';
import { repoRoot } from './boxyard-cluster.ts';

const GUIDE = join(repoRoot, 'docs', 'kubernetes.md');
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The fenced sh block after `<!-- walkthrough: <name>`, as written. */
export function walkthroughBlock(markdown: string, name: string): string {
  const marker = markdown.indexOf(`<!-- walkthrough: ${name}`);
  if (marker < 0) throw new Error(`docs/kubernetes.md has no <!-- walkthrough: ${name} --> marker`);
  const open = markdown.indexOf('```sh\n', marker);
  const close = markdown.indexOf('\n```\n', open);
  if (open < 0 || close < 0) throw new Error(`no \`\`\`sh block after the walkthrough: ${name} marker`);
  return markdown.slice(open + '```sh\n'.length, close + 1);
}

// A node's own processes and mounts (not the harness's etcd, apiserver or MinIO, which other test files run too):
// its components, and anything under a cluster's state folder (make cluster's, the demo's, this walk's).
const NODE_PROCESS =
  /(kubelet|kube-proxy|traefik|coredns|local-path-provisioner)-v|cluster-cli\.ts serve|demo-cli\.ts serve|boxyard-walkthrough-|boxyard-cluster-/;
const NODE_MOUNT = /\/run\/boxyard-node|kubelet|netns\/cni-|boxyard-walkthrough-|boxyard-cluster-/;

/** What a node leaves on a host when it is not cleaned up: processes, mounts, links, namespaces, rules, cgroups. */
export function hostTraces(): string[] {
  const out = (file: string, args: string[]) => {
    try {
      return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return '';
    }
  };
  const traces: string[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(NODE.runDir) || NODE_PROCESS.test(cmdline)) traces.push(`process ${cmdline.trim().slice(0, 120)}`);
    } catch {
      // exited
    }
  }
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) if (NODE_MOUNT.test(line)) traces.push(`mount ${line.split(' ')[1]}`);
  for (const line of out('ip', ['-o', 'link', 'show']).split('\n')) if (/^\d+: (boxyard0|veth)/.test(line)) traces.push(`link ${line.split(':')[1]!.trim()}`);
  for (const name of out('ip', ['netns', 'list']).split('\n')) if (name.startsWith('cni-')) traces.push(`netns ${name.split(' ')[0]}`);
  for (const line of out('iptables-save', []).split('\n'))
    if (/^:(KUBE-|CNI-|BOXYARD)/.test(line)) traces.push(`iptables chain ${line.split(' ')[0]!.slice(1)}`);
  for (const name of out('ipset', ['list', '-n']).split('\n')) if (/^(KUBE-|BOXYARD|boxyard)/i.test(name)) traces.push(`ipset ${name}`);
  for (const root of ['/sys/fs/cgroup/kubepods', '/sys/fs/cgroup/kubepods.slice']) if (existsSync(root)) traces.push(`cgroup ${root}`);
  if (existsSync('/sys/fs/cgroup'))
    for (const c of readdirSync('/sys/fs/cgroup')) if (existsSync(`/sys/fs/cgroup/${c}/kubepods`)) traces.push(`cgroup /sys/fs/cgroup/${c}/kubepods`);
  return traces.sort();
}

/** Runs a script with bash as the guide's reader would paste it, stopping at the first failing command. */
function bash(script: string, env: Record<string, string>, timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'bash',
      ['-c', `set -euo pipefail\n${script}`],
      { cwd: repoRoot, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
      },
    );
    child.stdin?.end();
  });
}

export function describeWalkthrough(): void {
  // Taken when the test file loads, before either cluster cycle of the file.
  const before = process.getuid?.() === 0 ? hostTraces() : [];

  describe.runIf(process.getuid?.() === 0)('the cluster walkthrough of docs/kubernetes.md, run as a script', () => {
    const guide = readFileSync(GUIDE, 'utf8');
    const up = walkthroughBlock(guide, 'up');
    const down = walkthroughBlock(guide, 'down');
    let dir: string;
    let env: Record<string, string>;
    let postgres: RunningPostgres | undefined;
    let minio: RunningMinio | undefined;
    let output = '';
    let browser: Browser | undefined;
    let downRan = false;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'boxyard-walkthrough-'));
      await chmod(dir, 0o755); // PostgreSQL runs as `postgres`
      // A state folder of its own, so `make cluster` starts empty (the guide: BOXYARD_HOME moves .boxyard).
      env = { BOXYARD_HOME: join(dir, 'home'), VAGRANT_HOME: join(dir, 'vagrant') };
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      if (!downRan) await bash(down, env, 180_000);
      await Promise.allSettled([postgres?.stop(), minio?.stop()]);
      await rm(dir, { recursive: true, force: true });
    }, 240_000);

    it('runs the up block: make cluster, then (with a database and an object store) to vagrant box add and wget --mirror', async () => {
      const [first, ...rest] = up.split('\n');
      expect(first).toMatch(/^make cluster\b/);
      const started = await bash(first!, env, 900_000);
      expect(started.code, started.output).toBe(0);
      // The reader's database and object store, on the node address that exists now.
      const secret = () => randomBytes(18).toString('base64url');
      [postgres, minio] = await Promise.all([
        startPostgres({ dir: join(dir, 'pg'), password: secret(), fast: true, alsoListen: { address: NODE.address, clients: NODE.podCidr } }),
        startMinio({ dir: join(dir, 'minio'), accessKey: `walk${randomBytes(4).toString('hex')}`, secretKey: secret(), host: NODE.address }),
      ]);
      const admin = new pg.Client({ connectionString: postgres.adminUrl });
      await admin.connect();
      await admin.query('create database boxyard');
      await admin.end();
      const dbUrl = Object.assign(new URL(postgres.adminUrl), { host: 'postgres.team.svc:5432', pathname: '/boxyard' }).href;
      Object.assign(env, {
        DB_URL: dbUrl,
        PG_PORT: String(postgres.port),
        S3_PORT: new URL(minio.endpoint).port,
        S3_ACCESS_KEY: minio.accessKey,
        S3_SECRET_KEY: minio.secretKey,
      });

      const walked = await bash(rest.join('\n'), env, 900_000);
      output = walked.output;
      expect(walked.code, output.slice(-4000)).toBe(0);
      expect(output).toMatch(/Successfully added box 'acme\/hello'/);
      const work = /the browser must trust (\S+)\/tls\.crt\)/.exec(output)?.[1];
      expect(work).toBeTruthy();
      expect(existsSync(join(work!, 'mirror', 'files.example.com', 'docs', 'hello.box'))).toBe(true);
      env.WALK_DIR = work!;
    }, 1_500_000);

    it('gives a shell through the terminal page in Chromium, as the user with a name', async () => {
      const line = /terminal: open (\S+) and sign in as admin \/ (\S+) \(/.exec(output);
      expect(line, output.slice(-2000)).toBeTruthy();
      const [, url, password] = line!;
      browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
      // The walk's certificate is self-signed: the page is trusted for this context only.
      const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      await page.goto(url!);
      await page.getByLabel('Username').fill('admin');
      await page.getByLabel('Password').fill(password!);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.locator('#status').textContent(), { timeout: 120_000 }).toMatch(/^(Connected|Reattached)$/);
      await page.locator('.xterm').click();
      await page.keyboard.type('echo $((6*7)) me=$(whoami)');
      await page.keyboard.press('Enter');
      const lines = async () => (await page.locator('.xterm-rows').innerText()).split('\n').map((l) => l.replace(/\u00a0/g, ' ').trim());
      await expect.poll(lines, { timeout: 60_000 }).toContain('42 me=user');
      expect((await lines()).join('\n')).not.toContain('I have no name!');
      await browser.close();
      browser = undefined;
    }, 300_000);

    it('runs the down block; after both cluster cycles of this file nothing is left on the host', async () => {
      downRan = true;
      const stopped = await bash(down, env, 180_000);
      expect(stopped.code, stopped.output).toBe(0);
      expect(readFileSync('/etc/hosts', 'utf8')).not.toMatch(/ # boxyard$/m);
      await Promise.allSettled([postgres?.stop(), minio?.stop()]);
      postgres = minio = undefined;
      const left = hostTraces().filter((trace) => !before.includes(trace));
      expect(left).toEqual([]);
      if (env.WALK_DIR) await rm(env.WALK_DIR, { recursive: true, force: true });
    }, 240_000);
  });
}
