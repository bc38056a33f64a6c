// HTTPS with a given certificate, or a generated self-signed one (kept in `cacheDir` so it survives restarts).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface TlsMaterial {
  cert: string;
  key: string;
  selfSigned: boolean;
}

export async function resolveTls(options: { cert?: string | undefined; key?: string | undefined; hosts: string[]; cacheDir?: string | undefined }): Promise<TlsMaterial> {
  if (options.cert || options.key) {
    if (!options.cert || !options.key) throw new Error('config: server.tls: cert and key must be given together');
    return { cert: await readFile(options.cert, 'utf8'), key: await readFile(options.key, 'utf8'), selfSigned: false };
  }
  const hosts = [...new Set(['localhost', '127.0.0.1', '::1', ...options.hosts])];
  const cacheName = `selfsigned-${hosts.join('_').replace(/[^a-z0-9_.-]/gi, '-')}`;
  if (options.cacheDir) {
    try {
      const [cert, key] = await Promise.all([readFile(join(options.cacheDir, `${cacheName}.crt`), 'utf8'), readFile(join(options.cacheDir, `${cacheName}.key`), 'utf8')]);
      return { cert, key, selfSigned: true };
    } catch {
      // not generated yet
    }
  }
  const notAfter = new Date(Date.now() + 365 * 24 * 3600 * 1000);
  const pems = await generate([{ name: 'commonName', value: options.hosts[0] ?? 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: notAfter,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })) },
    ],
  });
  if (options.cacheDir) {
    await mkdir(options.cacheDir, { recursive: true, mode: 0o700 });
    await writeFile(join(options.cacheDir, `${cacheName}.crt`), pems.cert);
    await writeFile(join(options.cacheDir, `${cacheName}.key`), pems.private, { mode: 0o600 });
  }
  return { cert: pems.cert, key: pems.private, selfSigned: true };
}
