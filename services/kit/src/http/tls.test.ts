// The self-signed certificate a service makes when TLS is on without files: kept in the state directory so the
// next start serves the same one, and made again when what is kept cannot serve.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkCertificatePair } from './certificate-pair.ts';
import { resolveTls, selfSignedFileName } from './tls.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kit-tls-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
const hosts = ['0.0.0.0'];
const name = selfSignedFileName(['localhost', '127.0.0.1', '::1']);

describe('resolveTls: a kept self-signed certificate', () => {
  it('is made once, with a 0600 key and no temporary files left, and served again on the next start', async () => {
    const first = await resolveTls({ hosts, cacheDir: dir });
    expect(first).toMatchObject({ selfSigned: true, persisted: true });
    expect(((await stat(join(dir, `${name}.key`))).mode & 0o777).toString(8)).toBe('600');
    expect((await readdir(dir)).sort()).toEqual([`${name}.crt`, `${name}.key`]);
    // It names where clients connect (never the wildcard the listener binds to).
    expect(checkCertificatePair(first.cert, first.key).subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    const second = await resolveTls({ hosts, cacheDir: dir });
    expect(fingerprint(second.cert)).toBe(fingerprint(first.cert));
  });

  it('is made again when the kept one is damaged, does not match its key, or is within 30 days of its end', async () => {
    const first = await resolveTls({ hosts, cacheDir: dir });
    await writeFile(join(dir, `${name}.crt`), 'garbage');
    const repaired = await resolveTls({ hosts, cacheDir: dir });
    expect(fingerprint(repaired.cert)).not.toBe(fingerprint(first.cert));

    const other = await generate([{ name: 'commonName', value: 'localhost' }], { keySize: 2048 });
    await writeFile(join(dir, `${name}.key`), other.private);
    const rekeyed = await resolveTls({ hosts, cacheDir: dir });
    expect(checkCertificatePair(rekeyed.cert, rekeyed.key)).toBeDefined();
    expect(await readFile(join(dir, `${name}.key`), 'utf8')).toBe(rekeyed.key);

    const ending = await generate([{ name: 'commonName', value: 'localhost' }], {
      keySize: 2048,
      notAfterDate: new Date(Date.now() + 10 * 24 * 3600 * 1000),
      extensions: [
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
      ],
    });
    await writeFile(join(dir, `${name}.crt`), ending.cert);
    await writeFile(join(dir, `${name}.key`), ending.private);
    const renewed = await resolveTls({ hosts, cacheDir: dir });
    expect(fingerprint(renewed.cert)).not.toBe(fingerprint(ending.cert));
    expect(new Date(new X509Certificate(renewed.cert).validTo).getTime()).toBeGreaterThan(new Date(new X509Certificate(ending.cert).validTo).getTime());
  });

  it('without a state directory: made for this process only, and says so', async () => {
    expect(await resolveTls({ hosts })).toMatchObject({ selfSigned: true, persisted: false });
  });

  it('configured files that do not make a pair stop the start with a message naming the key', async () => {
    const a = await generate([{ name: 'commonName', value: 'a.test' }], { keySize: 2048 });
    const b = await generate([{ name: 'commonName', value: 'b.test' }], { keySize: 2048 });
    await writeFile(join(dir, 'a.crt'), a.cert);
    await writeFile(join(dir, 'b.key'), b.private);
    await expect(resolveTls({ cert: join(dir, 'a.crt'), key: join(dir, 'b.key'), hosts })).rejects.toThrow(
      /server\.tls: the private key does not belong to the certificate/,
    );
  });
});
