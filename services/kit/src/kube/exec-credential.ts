// A kubeconfig user's `exec` plugin (client.authentication.k8s.io, as kubectl runs it): the command prints an
// ExecCredential whose status.token is the bearer token, kept until its expirationTimestamp (a minute before it),
// or for 15 minutes when it names none. The cloud logins (gke-gcloud-auth-plugin, aws eks get-token, kubelogin)
// work this way. Plugins that answer with a client certificate instead are refused: the connection pool's TLS
// settings are fixed when the client starts. As kubectl: `provideClusterInfo: true` passes the cluster (server,
// CA, TLS name and the exec extension's `config`) in KUBERNETES_EXEC_INFO; a plugin that must ask a person
// (`interactiveMode: Always`) is refused, nobody can answer it here; a missing command names its `installHint`.
import { execFile } from 'node:child_process';
import { isAbsolute, join } from 'node:path';

export interface ExecConfig {
  apiVersion?: string;
  command?: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  provideClusterInfo?: boolean;
  interactiveMode?: 'Never' | 'IfAvailable' | 'Always';
  installHint?: string;
}

/** The kubeconfig cluster as KUBERNETES_EXEC_INFO's spec.cluster names it (client.authentication.k8s.io Cluster). */
export interface ExecClusterInfo {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  /** base64, as in a kubeconfig. */
  'certificate-authority-data'?: string;
  /** The cluster's `extensions` entry named `client.authentication.k8s.io/exec`. */
  config?: unknown;
}

const NO_EXPIRY_MS = 15 * 60_000;
const EARLY_MS = 60_000;
const TIMEOUT_MS = 60_000;
const MAX_OUTPUT = 1024 * 1024;

interface ExecStatus {
  token?: string;
  expirationTimestamp?: string;
  clientCertificateData?: string;
}

function run(exec: ExecConfig, base: string, file: string, cluster: ExecClusterInfo | undefined): Promise<ExecStatus> {
  const command = exec.command!;
  // Like kubectl: a relative command with a slash is relative to the kubeconfig's directory; a bare name is on PATH.
  const resolved = !isAbsolute(command) && command.includes('/') ? join(base, command) : command;
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1';
  const env = {
    ...process.env,
    ...Object.fromEntries((exec.env ?? []).map((e) => [e.name, e.value])),
    KUBERNETES_EXEC_INFO: JSON.stringify({
      apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false, ...(exec.provideClusterInfo && cluster ? { cluster } : {}) },
    }),
  };
  return new Promise((resolve, reject) => {
    execFile(resolved, exec.args ?? [], { env, timeout: TIMEOUT_MS, maxBuffer: MAX_OUTPUT }, (error, stdout, stderr) => {
      if (error) {
        const hint = (error as NodeJS.ErrnoException).code === 'ENOENT' && exec.installHint ? `\n${exec.installHint.slice(0, 2000)}` : '';
        return reject(
          new Error(`kubeconfig ${file}: exec plugin ${command} failed: ${error.message}${stderr ? `: ${String(stderr).trim().slice(0, 500)}` : ''}${hint}`),
        );
      }
      let answer: { kind?: string; status?: ExecStatus };
      try {
        answer = JSON.parse(String(stdout)) as typeof answer;
      } catch {
        return reject(new Error(`kubeconfig ${file}: exec plugin ${command} printed no ExecCredential JSON`));
      }
      if (answer.kind !== 'ExecCredential' || !answer.status)
        return reject(new Error(`kubeconfig ${file}: exec plugin ${command} printed no ExecCredential status`));
      resolve(answer.status);
    });
  });
}

/** The `Authorization` value from the plugin, run again once the token it gave expires. */
export function execAuthorization(exec: ExecConfig, base: string, file: string, cluster?: ExecClusterInfo): () => Promise<string> {
  if (typeof exec.command !== 'string' || !exec.command) throw new Error(`kubeconfig ${file}: exec has no command`);
  if (exec.interactiveMode === 'Always')
    throw new Error(`kubeconfig ${file}: exec plugin ${exec.command} needs a person to answer it (interactiveMode: Always); use a non-interactive login`);
  let cached: { value: string; until: number } | undefined;
  let pending: Promise<string> | undefined;
  const refresh = async (): Promise<string> => {
    const status = await run(exec, base, file, cluster);
    if (!status.token) {
      throw new Error(
        `kubeconfig ${file}: exec plugin ${exec.command} gave ${status.clientCertificateData ? 'a client certificate; only tokens are supported' : 'no token'}`,
      );
    }
    const expires = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : NaN;
    cached = { value: `Bearer ${status.token}`, until: Number.isFinite(expires) ? expires - EARLY_MS : Date.now() + NO_EXPIRY_MS };
    return cached.value;
  };
  return async () => {
    if (cached && Date.now() < cached.until) return cached.value;
    // Concurrent requests share one run of the plugin.
    pending ??= refresh().finally(() => {
      pending = undefined;
    });
    return pending;
  };
}
