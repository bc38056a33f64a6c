// What the real-cluster suite does the way a platform team would: TLS certificates for the Ingress hosts from a
// private CA, and the hosts' names in /etc/hosts pointing at the ingress.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A private CA and one serving certificate per host, as PEM strings. */
export async function issueCertificates(dir: string, hosts: string[]): Promise<{ ca: string; certs: Record<string, { cert: string; key: string }> }> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '30'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-subj',
    '/CN=boxyard-e2e-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
    '-keyout',
    join(dir, 'ca.key'),
    '-out',
    join(dir, 'ca.crt'),
  ]);
  const certs: Record<string, { cert: string; key: string }> = {};
  for (const host of hosts) {
    await run('openssl', [
      'req',
      '-x509',
      ...ec,
      '-subj',
      `/CN=${host}`,
      '-addext',
      `subjectAltName=DNS:${host}`,
      '-addext',
      'extendedKeyUsage=serverAuth',
      '-CA',
      join(dir, 'ca.crt'),
      '-CAkey',
      join(dir, 'ca.key'),
      '-keyout',
      join(dir, `${host}.key`),
      '-out',
      join(dir, `${host}.crt`),
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
  if (current.includes(MARK))
    await writeFile(
      HOSTS_FILE,
      current
        .split('\n')
        .filter((l) => !l.includes(MARK))
        .join('\n'),
    );
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
