import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inClusterCredentials, kubeconfigCredentials, loadCredentials } from './credentials.ts';

const dir = mkdtempSync(join(tmpdir(), 'credentials-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, cluster: string, user: string): string {
  const file = join(dir, name);
  writeFileSync(file, `apiVersion: v1
kind: Config
current-context: here
contexts:
- name: here
  context: { cluster: c, user: u, namespace: team }
- name: elsewhere
  context: { cluster: other, user: u }
clusters:
- name: c
  cluster:
${cluster}
- name: other
  cluster: { server: https://other.example }
users:
- name: u
  user:
${user}
`);
  return file;
}

describe('credentials from a kubeconfig', () => {
  it('reads certificates from files relative to the kubeconfig, and impersonation', async () => {
    writeFileSync(join(dir, 'ca.crt'), 'CA');
    writeFileSync(join(dir, 'client.crt'), 'CERT');
    const file = kubeconfig('files.yaml', '    server: https://127.0.0.1:6443\n    certificate-authority: ca.crt\n    tls-server-name: kubernetes', `    client-certificate: client.crt\n    client-key-data: ${Buffer.from('KEY').toString('base64')}\n    as: system:serviceaccount:boxyard-system:boxyard`);
    const credentials = await kubeconfigCredentials(file);
    expect(credentials.server).toBe('https://127.0.0.1:6443');
    expect(credentials.namespace).toBe('team');
    expect({ ca: credentials.tls.ca?.toString(), cert: credentials.tls.cert?.toString(), key: credentials.tls.key?.toString(), servername: credentials.tls.servername }).toEqual({ ca: 'CA', cert: 'CERT', key: 'KEY', servername: 'kubernetes' });
    expect(await credentials.headers()).toEqual({ 'Impersonate-User': 'system:serviceaccount:boxyard-system:boxyard' });
  });

  it('sends a bearer token, from the kubeconfig or a token file', async () => {
    expect(await (await kubeconfigCredentials(kubeconfig('token.yaml', '    server: https://k', '    token: abc'))).headers()).toEqual({ Authorization: 'Bearer abc' });
    writeFileSync(join(dir, 'token'), 'from-file\n');
    expect(await (await kubeconfigCredentials(kubeconfig('tokenfile.yaml', '    server: https://k\n    insecure-skip-tls-verify: true', '    tokenFile: token'))).headers()).toEqual({ Authorization: 'Bearer from-file' });
    expect((await kubeconfigCredentials(join(dir, 'tokenfile.yaml'))).tls.rejectUnauthorized).toBe(false);
  });

  it('names what is missing', async () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: Config\ncurrent-context: nowhere\ncontexts: []\n');
    await expect(kubeconfigCredentials(file)).rejects.toThrow(/no context named "nowhere"/);
    await expect(loadCredentials(undefined, { KUBECONFIG: join(dir, 'absent.yaml') })).rejects.toThrow(/absent\.yaml/);
  });
});

describe('in-cluster credentials', () => {
  it('use the mounted service account token, CA and namespace', async () => {
    const root = mkdtempSync(join(dir, 'sa-'));
    writeFileSync(join(root, 'token'), 'sa-token');
    writeFileSync(join(root, 'ca.crt'), 'CLUSTER-CA');
    writeFileSync(join(root, 'namespace'), 'boxyard-system');
    const credentials = inClusterCredentials(root, { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' });
    expect(credentials.server).toBe('https://[fd00::1]:443');
    expect(credentials.namespace).toBe('boxyard-system');
    expect(credentials.tls.ca?.toString()).toBe('CLUSTER-CA');
    expect(await credentials.headers()).toEqual({ Authorization: 'Bearer sa-token' });
  });
});
