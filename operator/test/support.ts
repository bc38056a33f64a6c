// What the operator's integration tests share: kubectl/helm, the chart's RBAC applied to a control plane, a
// kubeconfig that impersonates the chart's ServiceAccount, operator processes (to kill -9), and an apiserver
// restart on a running control plane.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { kinds } from '@boxyard/registry/kinds.ts';
import { freePort } from '@boxyard/test/harness/ports.ts';
import { tool } from '@boxyard/test/harness/tools.ts';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);

// Processes started here must not outlive the test run, whatever happens to it.
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const chartDir = join(repoRoot, 'charts', 'boxyard');

/** The pinned kubectl against `kubeconfig`; YAML on stdin when given. */
export async function kubectl(kubeconfig: string, args: string[], stdin?: string): Promise<string> {
  const child = run(tool('KUBECTL'), [`--kubeconfig=${kubeconfig}`, ...args], { maxBuffer: 64 * 1024 * 1024 });
  if (stdin !== undefined) child.child.stdin?.end(stdin);
  try {
    return (await child).stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')}: ${e.stderr || e.message}`, { cause: error });
  }
}

export async function helm(args: string[]): Promise<string> {
  try {
    return (
      await run(tool('HELM'), args, {
        maxBuffer: 64 * 1024 * 1024,
        env: {
          ...process.env,
          HELM_CACHE_HOME: '/tmp/boxyard-helm-cache',
          HELM_CONFIG_HOME: '/tmp/boxyard-helm-config',
          HELM_DATA_HOME: '/tmp/boxyard-helm-data',
        },
      })
    ).stdout;
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`helm ${args.join(' ')}: ${e.stderr || e.stdout || e.message}`, { cause: error });
  }
}

export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

/** `helm template` of the chart, parsed. */
export async function renderChart(namespace: string, setArgs: string[] = [], extra: string[] = []): Promise<{ text: string; objects: RenderedObject[] }> {
  const text = await helm(['template', 'boxyard', chartDir, '--namespace', namespace, ...setArgs.flatMap((s) => ['--set', s]), ...extra]);
  const objects = parseAllDocuments(text)
    .map((d) => d.toJSON() as RenderedObject | null)
    .filter((o): o is RenderedObject => !!o);
  return { text, objects };
}

/**
 * Installs what the chart installs except the operator's own Deployment (the test runs the operator as a local
 * process): the CRDs, the namespace, the ServiceAccount and exactly the chart's RBAC. Returns the
 * ServiceAccount's user name.
 */
export async function installChartRbac(kubeconfig: string, namespace: string, setArgs: string[] = []): Promise<string> {
  await kubectl(kubeconfig, ['create', 'namespace', namespace]).catch(ignoreError('the namespace may exist already'));
  await kubectl(kubeconfig, ['apply', '--server-side', '-f', join(repoRoot, 'crds')]);
  await kubectl(kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', ...kinds.map((k) => `crd/${k.plural}.boxyard.io`)]);
  const { objects } = await renderChart(namespace, setArgs);
  const identity = objects.filter((o) =>
    ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].includes(
      o.kind,
    ),
  );
  await kubectl(kubeconfig, ['apply', '-f', '-'], identity.map((o) => stringify(o)).join('---\n'));
  const account = identity.find((o) => o.kind === 'ServiceAccount');
  if (!account) throw new Error('the chart renders no ServiceAccount');
  const user = `system:serviceaccount:${namespace}:${account.metadata.name}`;
  if (identity.some((o) => o.kind === 'ValidatingAdmissionPolicy')) {
    // The apiserver enforces a new policy only once its informer has it: wait until a forbidden write is refused.
    // (In a namespace where RBAC lets it write Secrets, so that it is the policy that answers.)
    const writesSecrets = (o: RenderedObject) => (o.rules as { resources: string[] }[] | undefined)?.some((r) => r.resources.includes('secrets'));
    const probeNamespace = identity.find((o) => o.kind === 'Role' && writesSecrets(o))?.metadata.namespace ?? namespace;
    const tokenSecret = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/service-account-token',
      metadata: { name: 'policy-probe', namespace: probeNamespace, annotations: { 'kubernetes.io/service-account.name': 'default' } },
    });
    await waitFor(
      "the chart's ValidatingAdmissionPolicy to be enforced",
      async () =>
        kubectl(kubeconfig, ['create', '--dry-run=server', `--as=${user}`, '-f', '-'], tokenSecret).then(
          () => false,
          (error: Error) => /denied request/.test(error.message),
        ),
      30_000,
      250,
    );
  }
  return user;
}

/** A copy of the admin kubeconfig whose user impersonates `user` (the admin is in system:masters). */
export async function impersonatingKubeconfig(adminKubeconfig: string, user: string, file: string): Promise<string> {
  const text = readFileSync(adminKubeconfig, 'utf8').replace(/(\n +client-key-data:)/, `\n    as: ${user}$1`);
  await writeFile(file, text, { mode: 0o600 });
  if ((await kubeconfigCredentials(file).headers())['Impersonate-User'] !== user) throw new Error('impersonation not set in the kubeconfig');
  return file;
}

export async function adminClient(kubeconfig: string): Promise<KubeClient> {
  return new KubeClient(kubeconfigCredentials(kubeconfig));
}

export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 90_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface OperatorProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  logFile: string;
  metrics(): Promise<string>;
  /** Graceful stop (SIGTERM): releases the lease. */
  stop(): Promise<void>;
  /** kill -9. */
  kill(): Promise<void>;
  log(): string;
}

/**
 * Starts `node operator/src/main.ts` with `args`, and waits for its health endpoint. With `metricsToken`, /metrics
 * is authenticated as the chart runs it and metrics() sends the token; without, the operator runs with
 * --metrics-auth=none.
 */
export async function startOperatorProcess(options: {
  kubeconfig: string;
  args?: string[];
  logFile: string;
  identity?: string;
  metricsToken?: string;
}): Promise<OperatorProcess> {
  const port = await freePort();
  const fd = openSync(options.logFile, 'a');
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'operator', 'src', 'main.ts'),
      '--kubeconfig',
      options.kubeconfig,
      '--metrics-port',
      String(port),
      '--metrics-host',
      '127.0.0.1',
      ...(options.identity ? ['--identity', options.identity] : []),
      ...(options.metricsToken ? [] : ['--metrics-auth', 'none']),
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', fd, fd], env: { ...process.env, KUBERNETES_SERVICE_HOST: '' } },
  );
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  track(child);
  const log = () => (existsSync(options.logFile) ? readFileSync(options.logFile, 'utf8') : '');
  await waitFor(
    `the operator's /health (log: ${options.logFile})`,
    async () => {
      if (child.exitCode !== null) throw new Error(`operator exited with ${child.exitCode}:\n${log()}`);
      return (await fetch(`http://127.0.0.1:${port}/health`)).ok;
    },
    30_000,
    100,
  );
  return {
    child,
    pid: child.pid!,
    port,
    logFile: options.logFile,
    metrics: async () => {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`, {
        headers: options.metricsToken ? { authorization: `Bearer ${options.metricsToken}` } : {},
      });
      if (!response.ok) throw new Error(`/metrics answered ${response.status}: ${await response.text()}`);
      return response.text();
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
    log,
  };
}

/** Sum of a Prometheus counter/gauge over the series whose labels match `filter`. */
export function metricSum(text: string, name: string, filter: (labels: Record<string, string>) => boolean = () => true): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labels: Record<string, string> = {};
    const [open, close] = [line.indexOf('{'), line.lastIndexOf('}')];
    const braces = open !== -1 && close > open ? line.slice(open + 1, close) : '';
    for (const m of braces.matchAll(/\b(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!;
    if (!filter(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const READS = new Set(['get', 'list', 'watch']);
/** API writes the operator made, excluding its own Lease (leader election renews it by design). */
export const writesOf = (metrics: string): number =>
  metricSum(metrics, 'boxyard_operator_api_requests_total', (l) => !READS.has(l.verb ?? '') && l.resource !== 'leases' && l.code !== '0');

/** The command line of the kube-apiserver serving `server` (found in /proc by its port). */
function apiserverProcess(server: string): { pid: number; argv: string[] } {
  const port = new URL(server).port;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (/kube-apiserver/.test(argv[0] ?? '') && argv.includes(`--secure-port=${port}`)) return { pid: Number(entry), argv };
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no kube-apiserver process serves port ${port}`);
}

/**
 * Restarts the kube-apiserver of a running control plane: finds its process by the port in `server`, stops it
 * (SIGTERM, then SIGKILL after 10 s: a draining apiserver keeps serving open watches), and starts the same
 * command line again. Returns a stop function for the new process, which the control plane's own stop() does not know.
 */
export async function restartApiserver(server: string, logFile: string): Promise<{ stop(): Promise<void> }> {
  const { pid, argv } = apiserverProcess(server);
  const alive = () => existsSync(`/proc/${pid}`) && !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (alive()) process.kill(pid, 'SIGKILL');
  await waitFor('the old kube-apiserver to exit', async () => !alive(), 10_000, 50);
  const fd = openSync(logFile, 'a');
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  track(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
