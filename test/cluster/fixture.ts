// What the real-cluster suite does the way a platform team would: kubectl and helm (the pinned builds), TLS
// certificates for the Ingress hosts from a private CA, and the hosts' names in /etc/hosts pointing at the ingress.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tool } from '../harness/tools.ts';

const run = promisify(execFile);

export interface Cli {
  (args: string[], stdin?: string): Promise<string>;
}

/** A CLI bound to one kubeconfig; failures carry stderr. */
export function cli(binary: string, kubeconfig: string): Cli {
  return async (args, stdin) => {
    const child = run(binary, [`--kubeconfig=${kubeconfig}`, ...args], { maxBuffer: 64 * 1024 * 1024 });
    if (stdin !== undefined) child.child.stdin?.end(stdin);
    try {
      return (await child).stdout;
    } catch (error) {
      const e = error as Error & { stderr?: string; stdout?: string };
      throw new Error(`${binary.split('/').pop()} ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
    }
  };
}

export const kubectlFor = (kubeconfig: string) => cli(tool('KUBECTL'), kubeconfig);
export const helmFor = (kubeconfig: string) => cli(tool('HELM'), kubeconfig);

/** The image `make image` built last (IMAGE=..., TAR=... in $BOXYARD_CACHE/images/latest.env). */
export function builtImage(): { image: string; tar: string } {
  const cache = process.env.BOXYARD_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'boxyard');
  const file = join(cache, 'images', 'latest.env');
  if (!existsSync(file)) throw new Error(`no Boxyard image: run \`make image\` first (${file} is missing)`);
  const values = Object.fromEntries(readFileSync(file, 'utf8').trim().split('\n').map((l) => l.split('=', 2) as [string, string]));
  if (!values.IMAGE || !values.TAR || !existsSync(values.TAR)) throw new Error(`${file} names no image archive that exists: run \`make image\``);
  return { image: values.IMAGE, tar: values.TAR };
}

/** A private CA and one serving certificate per host, as PEM strings. */
export async function issueCertificates(dir: string, hosts: string[]): Promise<{ ca: string; certs: Record<string, { cert: string; key: string }> }> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '30'];
  await run('openssl', ['req', '-x509', ...ec, '-subj', '/CN=boxyard-e2e-ca', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign', '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.crt')]);
  const certs: Record<string, { cert: string; key: string }> = {};
  for (const host of hosts) {
    await run('openssl', [
      'req', '-x509', ...ec, '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`, '-addext', 'extendedKeyUsage=serverAuth',
      '-CA', join(dir, 'ca.crt'), '-CAkey', join(dir, 'ca.key'), '-keyout', join(dir, `${host}.key`), '-out', join(dir, `${host}.crt`),
    ]);
    certs[host] = { cert: await readFile(join(dir, `${host}.crt`), 'utf8'), key: await readFile(join(dir, `${host}.key`), 'utf8') };
  }
  return { ca: await readFile(join(dir, 'ca.crt'), 'utf8'), certs };
}

const HOSTS_FILE = '/etc/hosts';
const MARK = '# boxyard-e2e';

/** Points `hosts` at the ingress on loopback, as a user's hosts entry or DNS record would. */
export async function addHostsEntries(hosts: string[]): Promise<void> {
  await removeHostsEntries();
  const current = await readFile(HOSTS_FILE, 'utf8');
  await writeFile(HOSTS_FILE, `${current.trimEnd()}\n127.0.0.1 ${hosts.join(' ')} ${MARK}\n`);
}

export async function removeHostsEntries(): Promise<void> {
  const current = await readFile(HOSTS_FILE, 'utf8');
  if (current.includes(MARK)) await writeFile(HOSTS_FILE, current.split('\n').filter((l) => !l.includes(MARK)).join('\n'));
}

/** Polls `check` until it returns a value; fails with the last error. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
