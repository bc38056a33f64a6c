// HTTPS with a given certificate, or a generated self-signed one kept in the service's state directory so it
// survives restarts (clients that pinned or trusted it keep working). The cached pair is checked on every start
// and made again when it is damaged, about to expire, or no longer names the listener's host.
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { checkCertificatePair, CertificatePairError } from './certificate-pair.ts';

export interface TlsMaterial {
  cert: string;
  key: string;
  selfSigned: boolean;
  /** For a self-signed pair: whether it is kept on disk (false: made for this process only). */
  persisted?: boolean;
}

const VALID_DAYS = 365;
/** A cached certificate closer than this to its end is replaced at start. */
const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;

export const selfSignedFileName = (hosts: string[]) => `selfsigned-${hosts.join('_').replace(/[^a-z0-9_.-]/gi, '-')}`;

/** Writes next to the target and renames, so a crash never leaves half a PEM file under the real name. */
async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  const temporary = `${path}.${randomUUID()}.tmp`;
  try {
    await writeFile(temporary, content, { mode, flag: 'wx' });
    await chmod(temporary, mode);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

const canonicalIp = (ip: string) => (isIP(ip) === 6 ? new URL(`http://[${ip}]`).hostname : ip);

async function readCached(dir: string, name: string, hosts: string[]): Promise<{ cert: string; key: string } | undefined> {
  let cert: string;
  let key: string;
  try {
    [cert, key] = await Promise.all([readFile(join(dir, `${name}.crt`), 'utf8'), readFile(join(dir, `${name}.key`), 'utf8')]);
  } catch {
    return undefined; // not made yet
  }
  try {
    const info = checkCertificatePair(cert, key, new Date(Date.now() + RENEW_BEFORE_DAYS * DAY_MS));
    // Node writes IPv6 addresses in full (0:0:0:0:0:0:0:1): compare canonical forms.
    const names = new Set(
      (info.subjectAltName ?? '').split(', ').map((entry) => (entry.startsWith('IP Address:') ? `IP:${canonicalIp(entry.slice(11))}` : entry)),
    );
    if (!hosts.every((h) => names.has(isIP(h) ? `IP:${canonicalIp(h)}` : `DNS:${h}`))) return undefined;
  } catch (error) {
    if (error instanceof CertificatePairError) return undefined;
    throw error;
  }
  return { cert, key };
}

async function generateSelfSigned(hosts: string[], commonName: string): Promise<{ cert: string; key: string }> {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + VALID_DAYS * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })) },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

export async function resolveTls(options: {
  cert?: string | undefined;
  key?: string | undefined;
  hosts: string[];
  cacheDir?: string | undefined;
}): Promise<TlsMaterial> {
  if (options.cert || options.key) {
    if (!options.cert || !options.key) throw new Error('config: server.tls: cert and key must be given together');
    const [cert, key] = await Promise.all([readFile(options.cert, 'utf8'), readFile(options.key, 'utf8')]);
    try {
      checkCertificatePair(cert, key);
    } catch (error) {
      if (error instanceof CertificatePairError)
        throw new Error(`config: server.tls: ${error.message} (cert ${options.cert}, key ${options.key})`, { cause: error });
      throw error;
    }
    return { cert, key, selfSigned: false };
  }
  // 0.0.0.0 and :: are where the listener binds, never an address a client connects to.
  const hosts = [...new Set(['localhost', '127.0.0.1', '::1', ...options.hosts])].filter((h) => h !== '0.0.0.0' && h !== '::');
  const name = selfSignedFileName(hosts);
  if (options.cacheDir) {
    const cached = await readCached(options.cacheDir, name, hosts);
    if (cached) return { ...cached, selfSigned: true, persisted: true };
  }
  const made = await generateSelfSigned(hosts, options.hosts.find((h) => h !== '0.0.0.0' && h !== '::') ?? 'localhost');
  if (!options.cacheDir) return { ...made, selfSigned: true, persisted: false };
  await mkdir(options.cacheDir, { recursive: true, mode: 0o700 });
  // Key first: a crash between the two leaves a key without a certificate, which the next start replaces.
  await writeAtomically(join(options.cacheDir, `${name}.key`), made.key, 0o600);
  await writeAtomically(join(options.cacheDir, `${name}.crt`), made.cert, 0o644);
  return { ...made, selfSigned: true, persisted: true };
}
